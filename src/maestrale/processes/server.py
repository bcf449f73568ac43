"""One server process: uvicorn serving the app, on a socket of its own or the supervisor's."""

from __future__ import annotations

import socket
from typing import Any

from maestrale.config import Settings


def server_config(settings: Settings) -> Any:
    import uvicorn

    from maestrale.app import create_app

    return uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http="httptools",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=10,
    )


def run_server(settings: Settings, sock: socket.socket | None = None) -> None:
    """Serve until SIGINT or SIGTERM: on `sock` (a process of `serve --workers`, spawned by the
    supervisor), or on a socket of its own."""
    import uvicorn

    from maestrale.core.logs import configure_logging

    configure_logging(settings.log_level, settings.log_json)
    server = uvicorn.Server(server_config(settings))
    server.run(sockets=[sock] if sock is not None else None)
