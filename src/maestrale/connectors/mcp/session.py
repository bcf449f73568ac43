"""One pooled MCP session: a background task that owns the transport and `ClientSession`
contexts (anyio wants them entered and exited by the same task) and keeps them open until it is
told to close, or has been idle too long; callers run requests on `session` from their own
tasks, between `hold()` and `release()`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from maestrale import __version__
from maestrale.connectors.mcp.failures import McpFailure, classify, root_cause
from maestrale.connectors.mcp.streams import EndWatchingStream
from maestrale.connectors.mcp.wire import (
    CALL_SCOPE,
    MAX_BODY_BYTES,
    CallScope,
    HttpWatch,
    watched_client,
)

logger = logging.getLogger(__name__)

Transport = Literal["streamable-http", "sse"]
SessionKey = tuple[str, Transport, str]

CLIENT_INFO = types.Implementation(name="maestrale", version=__version__)
_EXPLAIN_TIMEOUT = 0.5


def _connection_closed(exc: BaseException) -> bool:
    cause = root_cause(exc)
    return isinstance(cause, MCPError) and cause.code == CONNECTION_CLOSED


def _retrieve(future: asyncio.Future[None]) -> None:
    # An open that failed with nobody left waiting must not log "exception never retrieved".
    if not future.cancelled():
        future.exception()


class PooledSession:
    """An MCP session of one (server URL, transport, credentials) key, opened in the background
    at construction. `hold()` / `release()` count the callers using it; `close()` ends it;
    `retire()` ends it once the last caller has left."""

    def __init__(
        self,
        key: SessionKey,
        headers: Mapping[str, str],
        *,
        allow_private: bool,
        idle_seconds: float,
        open_deadline: float,
        on_exit: Callable[[PooledSession], None],
    ) -> None:
        self.key = key
        self.server, self.transport, _ = key
        self.secrets = tuple(value for value in headers.values() if value)
        self.watch = HttpWatch(on_fatal=self.close)
        self.session: ClientSession | None = None
        self.init_result: types.InitializeResult | None = None
        self.failure: McpFailure | None = None
        self.users = 0
        self.last_used = time.monotonic()
        self.retired = False
        self._headers = dict(headers)
        self._allow_private = allow_private
        self._idle_seconds = idle_seconds
        self._open_scope = CallScope(open_deadline)
        self._on_exit = on_exit
        self._open_expired = False
        self._closing = asyncio.Event()
        self._wake = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._ready: asyncio.Future[None] = loop.create_future()
        self._ready.add_done_callback(_retrieve)
        # A fresh context: the session outlives the request that opened it, and must not carry
        # that request's context variables (its deadline, tracing, tenant) along.
        self._task = loop.create_task(
            self._own(), name="mcp-session", context=contextvars.Context()
        )
        # The open is bounded as a whole (connect, the SSE endpoint event, initialize): past the
        # opener's deadline the owner task is cancelled, which unwinds the contexts in order.
        self._open_timer = loop.call_at(
            loop.time() + max(open_deadline - time.monotonic(), 0.0), self._expire_open
        )

    @property
    def usable(self) -> bool:
        """Open or opening, and not on its way out."""
        return not (self.retired or self._closing.is_set() or self._task.done())

    async def wait_ready(self) -> None:
        """Wait for the open to finish; McpFailure if it failed."""
        # Shielded: a waiter that gives up must not cancel the open for the others.
        await asyncio.shield(self._ready)

    def hold(self) -> None:
        """A caller starts using the session (before `wait_ready`, so it is not reaped)."""
        self.users += 1

    def release(self) -> None:
        """A caller is done with the session."""
        self.users -= 1
        self.last_used = time.monotonic()
        if self.users == 0:
            self._wake.set()

    def close(self) -> None:
        """Ask the owner task to close the session (requests in flight fail)."""
        self._closing.set()
        self._wake.set()

    def retire(self) -> None:
        """Close the session as soon as nobody uses it."""
        self.retired = True
        self._wake.set()

    async def ended(self, timeout: float) -> McpFailure | None:
        """Wait (at most `timeout`) for the owner task to end; what ended it, if it failed."""
        if not self._task.done():
            await asyncio.wait({self._task}, timeout=timeout)
        return self.failure

    async def wait_closed(self, timeout: float) -> None:
        """Wait for the owner task to end; cancel it past `timeout`."""
        if not self._task.done():
            await asyncio.wait({self._task}, timeout=timeout)
        if not self._task.done():
            self._task.cancel()
            await asyncio.wait({self._task})

    def never_sent(self, exc: BaseException) -> bool:
        """Whether a request that failed with `exc` provably never ran on the server: it was
        refused for an expired session, or no connection to the server could be opened."""
        if self.watch.expired:
            return True
        return _connection_closed(exc) and isinstance(
            self.watch.transport_error, httpx2.ConnectError
        )

    async def failure_of(self, exc: BaseException, scope: CallScope) -> McpFailure:
        """The McpFailure of a request that failed with `exc`. A closed connection is explained
        by what ended the session (an oversized event, a broken stream), which the owner task
        records as it unwinds, just after the waiting requests were woken."""
        failure = classify(exc, self.watch, scope, self.secrets)
        if failure.reason == "unreachable" and _connection_closed(exc):
            ended = await self.ended(timeout=_EXPLAIN_TIMEOUT)
            if ended is not None and self.watch.transport_error is None:
                return ended
        return failure

    def _expire_open(self) -> None:
        if not self._ready.done():
            self._open_expired = True
            self._task.cancel()

    async def _own(self) -> None:
        host = urlsplit(self.server).hostname
        try:
            # The opening requests are bounded by the opener's deadline (see wire._timeouts).
            CALL_SCOPE.set(self._open_scope)
            async with AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._connect(stack))
                read, write = streams
                session = await stack.enter_async_context(
                    ClientSession(
                        EndWatchingStream(read, self.close), write, client_info=CLIENT_INFO
                    )
                )
                self.init_result = await session.initialize()
                self.session = session
                CALL_SCOPE.set(None)
                self._open_timer.cancel()
                self._ready.set_result(None)
                logger.debug("MCP session open to %s over %s", host, self.transport)
                await self._serve()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            if not isinstance(root_cause(exc), Exception):
                # Cancelled: by aclose(), or by the open timer.
                if self._open_expired and not self._ready.done():
                    self._ready.set_exception(
                        McpFailure("timeout", "the MCP server did not open a session in time")
                    )
                raise
            # Often a group from the SDK's task groups (a socket error in a request task ends
            # the transport), sometimes holding cancellations next to the cause.
            opening = not self._ready.done()
            scope = self._open_scope if opening else None
            failure = classify(exc, self.watch, scope, self.secrets, opening=opening)
            self.failure = failure
            if not self._ready.done():
                self._ready.set_exception(failure)
            logger.debug("MCP session to %s ended: %s (%s)", host, failure.reason, failure)
        finally:
            self._open_timer.cancel()
            self._closing.set()
            if not self._ready.done():
                self._ready.set_exception(McpFailure("unreachable", "the MCP session was closed"))
            self._on_exit(self)

    def _connect(self, stack: AsyncExitStack) -> Any:
        if self.transport == "sse":

            def factory(
                headers: dict[str, str] | None = None,
                timeout: httpx2.Timeout | None = None,
                auth: httpx2.Auth | None = None,
            ) -> httpx2.AsyncClient:
                # The SDK's timeouts are replaced by the per-call ones (wire._timeouts).
                return self._client(legacy_sse=True)

            return sse_client(self.server, httpx_client_factory=factory)
        client = self._client(legacy_sse=False)
        stack.push_async_callback(client.aclose)
        return streamable_http_client(
            self.server, http_client=client, max_sse_event_size=MAX_BODY_BYTES
        )

    def _client(self, *, legacy_sse: bool) -> httpx2.AsyncClient:
        return watched_client(
            allow_private=self._allow_private,
            headers=self._headers,
            watch=self.watch,
            legacy_sse=legacy_sse,
        )

    async def _serve(self) -> None:
        """Keep the contexts open until closed, idle past the limit, or retired and unused."""
        while not self._closing.is_set():
            wait = math.inf
            if self.users == 0:
                idle = 0.0 if self.retired else self._idle_seconds
                wait = self.last_used + idle - time.monotonic()
                if wait <= 0:
                    return
            self._wake.clear()
            with anyio.move_on_after(wait):
                await self._wake.wait()
