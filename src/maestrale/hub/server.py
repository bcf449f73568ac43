"""The hub: one asyncio Unix-socket server in the supervisor that the server processes call.

It answers unary calls (`CALL` → `REPLY` or `FAIL`) and streams (`OPEN` → `ITEM`s → `END` or
`FAIL`, with `FEED` for a stream that reads its input as it comes), each as a task of its own, so
that a slow engine call never delays a limit check; `CANCEL` stops one when its caller went away.
`PUBLISH` is passed on to every other peer (the invalidation bus of a machine without Redis).
`gather` asks every peer the same question (each process's metrics). A peer that disconnects has
its calls cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maestrale.engines.types import EngineError
from maestrale.hub import frames

log = logging.getLogger("maestrale.hub")

# A unary handler gets the call's arguments; a stream handler gets them and the queue its
# `FEED` items arrive on (None after the last).
CallHandler = Callable[..., Awaitable[Any]]
StreamHandler = Callable[[tuple[Any, ...], asyncio.Queue[Any]], AsyncIterator[Any]]


@dataclass(frozen=True, slots=True)
class RemoteFailure:
    """What crosses for an exception: an `EngineError` is raised again as such on the caller's
    side, anything else as `HubError` with its type and message (never a traceback)."""

    kind: str
    message: str
    status: int = 500
    code: str = "engine_error"

    @classmethod
    def of(cls, exc: BaseException) -> RemoteFailure:
        if isinstance(exc, EngineError):
            return cls("engine", exc.message, exc.status, exc.code)
        return cls(type(exc).__name__, str(exc))

    def exception(self) -> Exception:
        if self.kind == "engine":
            return EngineError(self.status, self.message, code=self.code)
        return HubError(f"{self.kind}: {self.message}")


class HubError(RuntimeError):
    """A hub call failed with an error other than an engine's."""


@dataclass(slots=True, eq=False)
class _Peer:
    writer: asyncio.StreamWriter
    tasks: dict[int, asyncio.Task[None]] = field(default_factory=dict)
    feeds: dict[int, asyncio.Queue[Any]] = field(default_factory=dict)
    asked: dict[int, asyncio.Future[Any]] = field(default_factory=dict)  # the hub's questions

    def send(self, *message: Any) -> None:
        if not self.writer.is_closing():
            self.writer.write(frames.encode(message))


class Hub:
    def __init__(
        self, calls: Mapping[str, CallHandler], streams: Mapping[str, StreamHandler]
    ) -> None:
        self.calls = dict(calls)
        self.streams = dict(streams)
        self._peers: set[_Peer] = set()
        self._server: asyncio.AbstractServer | None = None
        self._ids = itertools.count(1)

    async def start(self, path: Path) -> None:
        self._server = await asyncio.start_unix_server(self._serve, path=str(path))
        path.chmod(0o600)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for peer in list(self._peers):
            peer.writer.close()
            for task in peer.tasks.values():
                task.cancel()

    async def gather(self, name: str, *args: Any, timeout: float = 2.0) -> list[Any]:
        """Ask every peer `name(*args)`; the answers that came in time and without error."""
        loop = asyncio.get_running_loop()
        asked = []
        for peer in list(self._peers):
            ident = next(self._ids)
            peer.asked[ident] = future = loop.create_future()
            peer.send(frames.CALL, ident, name, args)
            asked.append((peer, ident, future))
        if asked:
            await asyncio.wait([future for _, _, future in asked], timeout=timeout)
        answers = []
        for peer, ident, future in asked:
            peer.asked.pop(ident, None)
            if future.done() and not future.cancelled() and future.exception() is None:
                answers.append(future.result())
            else:
                future.cancel()
        return answers

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not frames.same_user(writer):
            log.warning("refused a hub connection from another user")
            writer.close()
            return
        peer = _Peer(writer)
        self._peers.add(peer)
        try:
            while True:
                self._dispatch(peer, await frames.read_frame(reader))
        except frames.HubClosed:
            pass
        except Exception:
            log.exception("hub connection dropped after a malformed frame")
        finally:
            self._peers.discard(peer)
            for task in peer.tasks.values():
                task.cancel()
            for future in peer.asked.values():
                future.cancel()
            writer.close()

    def _dispatch(self, peer: _Peer, message: tuple[Any, ...]) -> None:
        kind, ident = message[0], message[1]
        if kind == frames.CALL:
            self._start(peer, ident, self._call(peer, ident, message[2], message[3]))
        elif kind == frames.OPEN:
            feed: asyncio.Queue[Any] = asyncio.Queue()
            peer.feeds[ident] = feed
            self._start(peer, ident, self._stream(peer, ident, message[2], message[3], feed))
        elif kind == frames.FEED:
            queue = peer.feeds.get(ident)
            if queue is not None:
                queue.put_nowait(message[2])
        elif kind == frames.CANCEL:
            task = peer.tasks.get(ident)
            if task is not None:
                task.cancel()
        elif kind in (frames.REPLY, frames.FAIL):
            future = peer.asked.get(ident)
            if future is not None and not future.done():
                if kind == frames.REPLY:
                    future.set_result(message[2])
                else:
                    future.set_exception(message[2].exception())
        elif kind == frames.PUBLISH:
            for other in self._peers:
                if other is not peer:
                    other.send(frames.PUBLISH, 0, message[2])

    def _start(self, peer: _Peer, ident: int, work: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await work
            finally:
                peer.tasks.pop(ident, None)
                peer.feeds.pop(ident, None)

        peer.tasks[ident] = asyncio.create_task(run())

    async def _call(self, peer: _Peer, ident: int, name: str, args: tuple[Any, ...]) -> None:
        try:
            value = await self.calls[name](*args)
        except asyncio.CancelledError:
            return
        except Exception as exc:
            peer.send(frames.FAIL, ident, RemoteFailure.of(exc))
            return
        peer.send(frames.REPLY, ident, value)

    async def _stream(
        self,
        peer: _Peer,
        ident: int,
        name: str,
        args: tuple[Any, ...],
        feed: asyncio.Queue[Any],
    ) -> None:
        try:
            items = self.streams[name](args, feed)
            try:
                async for item in items:
                    peer.send(frames.ITEM, ident, item)
                    await peer.writer.drain()
            finally:
                close = getattr(items, "aclose", None)
                if close is not None:
                    with contextlib.suppress(Exception):
                        await close()
        except asyncio.CancelledError:
            return
        except Exception as exc:
            peer.send(frames.FAIL, ident, RemoteFailure.of(exc))
            return
        peer.send(frames.END, ident)
