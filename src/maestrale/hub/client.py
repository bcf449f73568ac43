"""A server process's connection to the hub: calls and streams multiplexed on one socket, and the
broadcasts of the other processes handed to a callback.

When the connection is lost (the supervisor is gone), pending calls fail with `HubClosed` and
`on_lost` runs once: a server process has nothing left to serve correctly without its hub.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from maestrale.hub import frames
from maestrale.hub.server import RemoteFailure

log = logging.getLogger("maestrale.hub")

_END = object()


class HubClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._calls: dict[int, asyncio.Future[Any]] = {}
        self._streams: dict[int, asyncio.Queue[Any]] = {}
        self._listeners: list[Callable[[bytes], None]] = []
        self._answers: dict[str, Callable[[], Any]] = {}
        self.on_lost: Callable[[], None] | None = None
        self._closing = False
        self._task = asyncio.create_task(self._read(), name="hub-client")

    @classmethod
    async def connect(cls, path: Path) -> HubClient:
        reader, writer = await asyncio.open_unix_connection(str(path), limit=1 << 20)
        return cls(reader, writer)

    def _send(self, *message: Any) -> None:
        if self._writer.is_closing():
            raise frames.HubClosed("hub connection closed")
        self._writer.write(frames.encode(message))

    async def call(self, name: str, *args: Any) -> Any:
        ident = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._calls[ident] = future
        try:
            self._send(frames.CALL, ident, name, args)
            return await future
        except asyncio.CancelledError:
            with contextlib.suppress(frames.HubClosed):
                self._send(frames.CANCEL, ident)
            raise
        finally:
            self._calls.pop(ident, None)

    async def stream(
        self, name: str, *args: Any, feed: asyncio.Queue[Any] | None = None
    ) -> AsyncIterator[Any]:
        """Yield the items of a hub stream. With `feed`, what is put on it is sent to the stream's
        input as it comes, up to and including a None (its end)."""
        ident = next(self._ids)
        items: asyncio.Queue[Any] = asyncio.Queue()
        self._streams[ident] = items
        pump: asyncio.Task[None] | None = None
        done = False
        try:
            self._send(frames.OPEN, ident, name, args)
            if feed is not None:
                pump = asyncio.create_task(self._pump(ident, feed))
            while True:
                item = await items.get()
                if item is _END:
                    done = True
                    return
                if isinstance(item, RemoteFailure):
                    done = True
                    raise item.exception()
                if isinstance(item, frames.HubClosed):
                    done = True
                    raise item
                yield item
        finally:
            self._streams.pop(ident, None)
            if pump is not None:
                pump.cancel()
            if not done:
                with contextlib.suppress(frames.HubClosed):
                    self._send(frames.CANCEL, ident)

    async def _pump(self, ident: int, feed: asyncio.Queue[Any]) -> None:
        with contextlib.suppress(frames.HubClosed):
            while True:
                value = await feed.get()
                self._send(frames.FEED, ident, value)
                if value is None:
                    return

    def listen(self, callback: Callable[[bytes], None]) -> None:
        """Receive every other process's broadcasts."""
        self._listeners.append(callback)

    def answer(self, name: str, handler: Callable[[], Any]) -> None:
        """Answer the hub's question `name` (see `Hub.gather`) with `handler()`."""
        self._answers[name] = handler

    def _reply(self, ident: int, name: str) -> None:
        handler = self._answers.get(name)
        try:
            if handler is None:
                raise LookupError(f"no answer to {name!r}")
            reply: tuple[Any, ...] = (frames.REPLY, ident, handler())
        except Exception as exc:
            reply = (frames.FAIL, ident, RemoteFailure.of(exc))
        with contextlib.suppress(frames.HubClosed):
            self._send(*reply)

    def publish(self, payload: bytes) -> None:
        self._send(frames.PUBLISH, 0, payload)

    async def drain(self) -> None:
        """Wait until what was sent has left this process."""
        await self._writer.drain()

    async def _read(self) -> None:
        try:
            while True:
                self._deliver(await frames.read_frame(self._reader))
        except frames.HubClosed:
            pass
        except Exception:
            log.exception("hub connection dropped after a malformed frame")
        lost = frames.HubClosed("hub connection lost")
        for future in self._calls.values():
            if not future.done():
                future.set_exception(lost)
        for queue in self._streams.values():
            queue.put_nowait(lost)
        self._writer.close()
        if not self._closing and self.on_lost is not None:
            self.on_lost()

    def _deliver(self, message: tuple[Any, ...]) -> None:
        kind, ident = message[0], message[1]
        if kind == frames.PUBLISH:
            for listener in self._listeners:
                try:
                    listener(message[2])
                except Exception:
                    log.exception("a hub broadcast listener failed")
            return
        if kind == frames.CALL:
            self._reply(ident, message[2])
            return
        future = self._calls.get(ident)
        if future is not None:
            if future.done():
                return
            if kind == frames.REPLY:
                future.set_result(message[2])
            elif kind == frames.FAIL:
                future.set_exception(message[2].exception())
            return
        queue = self._streams.get(ident)
        if queue is not None:
            queue.put_nowait(_END if kind == frames.END else message[2])  # ITEM or FAIL

    async def aclose(self) -> None:
        self._closing = True
        self._writer.close()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
