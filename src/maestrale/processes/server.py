"""One server process: uvicorn serving the app, on a socket of its own or the supervisor's.

Graceful shutdown. On SIGTERM the process drains at once: `/health` and `/ready` answer 503
`draining` and the in-process worker stops claiming jobs. It still accepts connections for
`shutdown_drain_seconds`, so that a load balancer's health checks take it out of rotation
before it stops listening (the requests that still come meanwhile are served). Then it stops
accepting (new connections are refused once every process on the socket has stopped), closes
idle keep-alive connections, and lets in-flight requests and streams finish until
`shutdown_grace_seconds` after the signal, when what is left is cancelled; the app then shuts
down (running jobs get `worker_grace_seconds`, buffered accounting is written) and the process
exits. A request cut at the grace before its response started is answered 503 with
`Retry-After` (try again elsewhere), not uvicorn's 500. SIGINT (Ctrl-C) skips the drain; a second
signal (a second or more after the first) ends the drain at once, a third stops without waiting
for anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import time
from types import FrameType
from typing import Any

import orjson
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from maestrale.config import Settings
from maestrale.core.readiness import Lifecycle

_CUT = orjson.dumps(
    {
        "object": "error",
        "message": "the server is shutting down; retry the request",
        "type": "api_error",
        "code": "shutting_down",
        "param": None,
    }
)


class CutAtGrace:
    """The app, whose requests still running when the grace ends (uvicorn cancels them) are
    answered 503 if their response had not started; uvicorn would answer 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except asyncio.CancelledError:
            if scope["type"] == "http":
                # Refused by the server when the response had started already: the client
                # then sees the body cut short, as it should.
                with contextlib.suppress(Exception):
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 503,
                            "headers": [
                                (b"content-type", b"application/json"),
                                (b"content-length", str(len(_CUT)).encode()),
                                (b"retry-after", b"1"),
                                (b"connection", b"close"),
                            ],
                        }
                    )
                    await send({"type": "http.response.body", "body": _CUT})
            raise


def server_config(settings: Settings, app: Any = None) -> uvicorn.Config:
    from maestrale.app import create_app

    return uvicorn.Config(
        CutAtGrace(app if app is not None else create_app(settings)),
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http="httptools",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=max(1, round(settings.shutdown_grace_seconds)),
    )


# A signal this soon after the first one is the same request to stop: systemd signals every
# process of the service at once, and the supervisor passes its own signal on.
SAME_STOP_SECONDS = 1.0


class GracefulServer(uvicorn.Server):
    """uvicorn's server with the drain and the grace described above."""

    def __init__(self, config: uvicorn.Config, lifecycle: Lifecycle, settings: Settings) -> None:
        super().__init__(config)
        self.lifecycle = lifecycle
        self.grace = settings.shutdown_grace_seconds
        self.drain = min(settings.shutdown_drain_seconds, self.grace)
        self.signalled_at: float | None = None
        self.drain_until = 0.0

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # A signal handler: plain assignments only; the event loop acts on them (on_tick).
        captured: list[int] | None = getattr(self, "_captured_signals", None)
        if captured is not None:  # uvicorn raises them again once the server has stopped
            captured.append(sig)
        now = time.monotonic()
        if self.signalled_at is None:
            self.signalled_at = now
            self.drain_until = now + (0.0 if sig == signal.SIGINT else self.drain)
            self.lifecycle.draining = True
        elif now - self.signalled_at < SAME_STOP_SECONDS:
            pass  # the same stop, told twice (systemd to the group, and the supervisor)
        elif not self.should_exit:
            self.should_exit = True
        else:
            self.force_exit = True

    async def on_tick(self, counter: int) -> bool:
        if self.signalled_at is not None:
            self.lifecycle.begin_draining()
            now = time.monotonic()
            if self.should_exit or now >= self.drain_until:
                self.should_exit = True
                # What is left of the grace goes to the in-flight requests (uvicorn waits that
                # long, then cancels them); typed an int by uvicorn, used as a float.
                left = max(0.0, self.signalled_at + self.grace - now)
                setattr(self.config, "timeout_graceful_shutdown", left)  # noqa: B010
                return True
        return await super().on_tick(counter)


def graceful_server(settings: Settings, workflows_off: str | None = None) -> GracefulServer:
    """The server of `settings`' app, with the graceful shutdown described above
    (`workflows_off`: why workflows are off, when a supervisor's embedded Temporal failed)."""
    from maestrale.app import create_app

    app = create_app(settings)
    app.state.workflows_off = workflows_off
    return GracefulServer(server_config(settings, app), app.state.lifecycle, settings)


def run_server(
    settings: Settings, sock: socket.socket | None = None, *, workflows_off: str | None = None
) -> None:
    """Serve until SIGINT or SIGTERM: on `sock` (a process of `serve --workers`, spawned by the
    supervisor, with why its embedded Temporal did not start), or on a socket of its own."""
    from maestrale.core.logs import configure_logging

    configure_logging(settings.log_level, settings.log_json)
    server = graceful_server(settings, workflows_off)
    server.run(sockets=[sock] if sock is not None else None)
