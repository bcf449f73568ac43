"""The transport's read stream, seen by the pooled session: when the server's stream ends (the
legacy SSE stream closes when the server goes away), the session is closed at once, before a
caller sends a request that could never be answered."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from types import TracebackType

import anyio
from mcp.client._transport import ReadStream
from mcp.shared.message import SessionMessage

Item = SessionMessage | Exception


class EndWatchingStream:
    """A ReadStream that calls `on_end` once it has reached its end or been closed."""

    def __init__(self, inner: ReadStream[Item], on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last item (the dispatcher looks for it by name)."""
        context: contextvars.Context | None = getattr(self._inner, "last_context", None)
        return context

    async def receive(self) -> Item:
        """The next item; EndOfStream (after `on_end`) at the end."""
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        """Close the stream."""
        await self._inner.aclose()

    def __aiter__(self) -> EndWatchingStream:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> EndWatchingStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None
