"""The frame of a realtime session on an accepted WebSocket: a reader of the client's messages
and a writer of the server's, run together until either ends.

A client that stops reading cannot make the server buffer without bound: each send (and the
closing frame) waits at most SEND_TIMEOUT_SECONDS, then the client counts as gone and the
session ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import orjson
from starlette.websockets import WebSocket

from maestrale.audio.realtime.messages import error_body
from maestrale.core.errors import AppError

IDLE_SECONDS = 60.0
SEND_TIMEOUT_SECONDS = 30.0


class IdleClient(AppError):
    status_code = 408
    code = "client_idle"


class Gone(Exception):
    """The client is gone or stopped reading: nothing more can be sent."""


async def receive_frame(websocket: WebSocket, timeout: float | None) -> str | bytes | None:
    """The client's next message (text or bytes), None once it has gone; `TimeoutError` when
    it sends nothing for `timeout` seconds."""
    message = await asyncio.wait_for(websocket.receive(), timeout)
    if message["type"] == "websocket.disconnect":
        return None
    frame: str | bytes | None = message.get("text")
    if frame is None:
        frame = message.get("bytes") or b""
    return frame


class DuplexSession:
    def __init__(self, websocket: WebSocket) -> None:
        self.websocket = websocket
        self._sending = asyncio.Lock()

    async def _send(self, body: dict[str, Any]) -> None:
        async with self._sending:
            try:
                await asyncio.wait_for(
                    self.websocket.send_text(orjson.dumps(body).decode()), SEND_TIMEOUT_SECONDS
                )
            except Exception as exc:  # closed under us, or not read: the client is gone
                raise Gone from exc

    async def _close(self, code: int) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.websocket.close(code), SEND_TIMEOUT_SECONDS)

    async def _fail(self, error: AppError) -> None:
        """Send the fatal `error` event and close."""
        with contextlib.suppress(Gone):
            await self._send(error_body(error))
        await self._close(1011 if error.status_code >= 500 else 1008)

    async def _read(self) -> None:
        raise NotImplementedError

    async def _write(self) -> None:
        raise NotImplementedError

    def _finished(self) -> None:
        """Free what the session holds, once both tasks are over."""

    async def run(self) -> None:
        """Serve the session until it ends. The reader ends when the client goes away (the
        writer's stream is then closed, and accounted as abandoned); the writer ends with the
        session."""
        name = type(self).__name__
        tasks = {
            asyncio.create_task(self._write(), name=f"{name}-writer"),
            asyncio.create_task(self._read(), name=f"{name}-reader"),
        }
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Gone):
                    await task
            self._finished()
