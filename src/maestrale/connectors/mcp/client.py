"""`McpClients`: the process's MCP client, with sessions pooled per (server URL, transport,
credentials) and reused across requests.

A call is bounded as a whole by its `timeout` (open, handshake, request). Streamable HTTP is
tried first; a server that answers the opening request with 400/404/405 is tried over the legacy
SSE transport (the MCP backwards-compatibility rule), and the transport that worked is
remembered for the URL. A request that fails on a reused session that turned out dead is tried
once more on a fresh session, but a tool call only when it provably never reached the server
(session expired, or no connection could be opened): a tool is never run twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.client.session import ClientSession

from maestrale.connectors.http import check_url
from maestrale.connectors.mcp.failures import McpFailure, WrongTransport
from maestrale.connectors.mcp.results import (
    MAX_PAGES,
    MAX_TOOLS,
    ServerInfo,
    ToolResult,
    collect_tools,
    server_card,
    tool_result,
    tool_result_of,
    tools_page_of,
)
from maestrale.connectors.mcp.session import PooledSession, SessionKey, Transport
from maestrale.connectors.mcp.wire import CALL_SCOPE, OFFLOADED, CallScope, HttpWatch
from maestrale.core.fetch import UrlNotAllowed

T = TypeVar("T")

_REMEMBERED_URLS = 1024
_CLOSE_TIMEOUT = 5.0


def _kept(watch: HttpWatch, meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The result a stub names (see `wire.OFFLOADED`), or None for a result that is no stub."""
    if not meta or OFFLOADED not in meta:
        return None
    kept = watch.offloaded.pop(str(meta[OFFLOADED]), None)
    if kept is None:
        raise McpFailure("protocol", "the MCP server's answer names no result of this call")
    return kept


def _digest(headers: Mapping[str, str]) -> str:
    # The pool key carries a digest, never the credentials themselves.
    pairs = sorted((name.lower(), value) for name, value in headers.items())
    return hashlib.sha256(json.dumps(pairs).encode()).hexdigest()


class McpClients:
    """One per process (it hangs off the app's Services): pooled MCP sessions to tool servers.

    Every method raises McpFailure for anything that goes wrong with the server (never another
    exception), except that a cancelled caller gets its CancelledError, after the request in
    flight has been cancelled toward the server. Close with `aclose()`.
    """

    def __init__(
        self, *, allow_private: bool, idle_seconds: float = 60.0, max_sessions: int = 256
    ) -> None:
        self._allow_private = allow_private
        self._idle_seconds = idle_seconds
        self._max_sessions = max(1, max_sessions)
        self._sessions: OrderedDict[SessionKey, PooledSession] = OrderedDict()
        self._retired: set[PooledSession] = set()
        # URLs whose server answered on the legacy SSE transport only (most recent last).
        self._legacy: OrderedDict[str, None] = OrderedDict()
        self._closed = False

    async def discover(
        self, server: str, headers: Mapping[str, str], *, timeout: float
    ) -> ServerInfo:
        """Connect to `server` (an MCP endpoint URL) with `headers`, read its card and list its
        tools (every page, bounded)."""

        async def run(pooled: PooledSession, session: ClientSession) -> ServerInfo:
            pages: list[types.ListToolsResult] = []
            cursor: str | None = None
            seen: set[str] = set()
            for _ in range(MAX_PAGES):
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                kept = _kept(pooled.watch, page.meta)
                if kept is not None:
                    page = await asyncio.to_thread(tools_page_of, kept)
                pages.append(page)
                cursor = page.next_cursor
                if cursor is None or cursor in seen or sum(len(p.tools) for p in pages) > MAX_TOOLS:
                    break
                seen.add(cursor)
            assert pooled.init_result is not None
            card = server_card(pooled.init_result, server=server, transport=pooled.transport)
            return ServerInfo(card=card, tools=collect_tools(pages))

        return await self._run(server, headers, timeout, run, idempotent=True)

    async def call_tool(
        self,
        server: str,
        headers: Mapping[str, str],
        name: str,
        arguments: dict[str, Any],
        *,
        timeout: float,
    ) -> ToolResult:
        """Call tool `name` with `arguments`. A tool that reports an error gives a ToolResult with
        `is_error`; an unknown tool (a JSON-RPC error) gives McpFailure("error")."""

        async def run(pooled: PooledSession, session: ClientSession) -> ToolResult:
            # send_request rather than session.call_tool: the latter lists the tools again to
            # validate structured content against the output schema, a round trip per call
            # that buys nothing here (the model reads the result as it is).
            request = types.CallToolRequest(
                params=types.CallToolRequestParams(name=name, arguments=arguments)
            )
            result = await session.send_request(request, types.CallToolResult)
            kept = _kept(pooled.watch, result.meta)
            if kept is not None:
                return await asyncio.to_thread(tool_result_of, kept)
            return tool_result(result)

        return await self._run(server, headers, timeout, run, idempotent=False)

    async def aclose(self) -> None:
        """Close every session (in-flight requests fail); the pool refuses new calls."""
        self._closed = True
        pooled = [*self._sessions.values(), *self._retired]
        self._sessions.clear()
        for each in pooled:
            each.close()
        await asyncio.gather(*(each.wait_closed(_CLOSE_TIMEOUT) for each in pooled))

    async def _run(
        self,
        server: str,
        headers: Mapping[str, str],
        timeout: float,
        action: Callable[[PooledSession, ClientSession], Awaitable[T]],
        *,
        idempotent: bool,
    ) -> T:
        if self._closed:
            raise McpFailure("unreachable", "the MCP client is closed")
        try:
            check_url(server, allow_private=self._allow_private)
        except UrlNotAllowed as exc:
            raise McpFailure("refused", str(exc)) from None
        deadline = time.monotonic() + timeout
        try:
            with anyio.fail_after(timeout):
                return await self._attempts(server, dict(headers), deadline, action, idempotent)
        except TimeoutError:
            raise McpFailure(
                "timeout", f"the MCP server did not answer within {timeout:g} s"
            ) from None

    async def _attempts(
        self,
        server: str,
        headers: dict[str, str],
        deadline: float,
        action: Callable[[PooledSession, ClientSession], Awaitable[T]],
        idempotent: bool,
    ) -> T:
        digest = _digest(headers)
        for attempt in (1, 2):
            async with self._using(server, headers, digest, deadline) as (pooled, fresh):
                session = pooled.session
                if session is None or not pooled.usable:
                    # Died between its open and now: nothing was sent on it.
                    continue
                # Seen by the HTTP layer in the requests of this attempt (see wire.CALL_SCOPE).
                scope = CallScope(deadline)
                token = CALL_SCOPE.set(scope)
                try:
                    return await action(pooled, session)
                except McpFailure:
                    raise
                except Exception as exc:
                    failure = await pooled.failure_of(exc, scope)
                    retry = attempt == 1 and not fresh
                    if retry and (
                        pooled.never_sent(exc) or (idempotent and failure.reason == "unreachable")
                    ):
                        pooled.close()
                        continue
                    raise failure from None
                finally:
                    CALL_SCOPE.reset(token)
        raise McpFailure("unreachable", "the MCP session kept closing")

    @asynccontextmanager
    async def _using(
        self, server: str, headers: dict[str, str], digest: str, deadline: float
    ) -> AsyncIterator[tuple[PooledSession, bool]]:
        """A ready session for (server, headers), held for the block; and whether it is fresh."""
        first: Transport = "sse" if server in self._legacy else "streamable-http"
        try:
            pooled, fresh = await self._ready(server, first, headers, digest, deadline)
        except WrongTransport as failure:
            other: Transport = "streamable-http" if first == "sse" else "sse"
            try:
                pooled, fresh = await self._ready(server, other, headers, digest, deadline)
            except McpFailure as second:
                # The first answer says more ("not an MCP server") unless the other transport
                # is there but refuses the credentials or the address.
                if isinstance(second, WrongTransport) or second.reason not in (
                    "unauthorized",
                    "refused",
                ):
                    raise failure from None
                raise
            self._remember(server, other)
        try:
            yield pooled, fresh
        finally:
            pooled.release()

    async def _ready(
        self,
        server: str,
        transport: Transport,
        headers: dict[str, str],
        digest: str,
        deadline: float,
    ) -> tuple[PooledSession, bool]:
        """A ready session of the key, held; and whether this call opened it."""
        key: SessionKey = (server, transport, digest)
        while True:
            pooled = self._sessions.get(key)
            fresh = pooled is None or not pooled.usable
            if pooled is None or fresh:
                pooled = self._start(key, headers, deadline)
            else:
                self._sessions.move_to_end(key)
            pooled.hold()
            try:
                await pooled.wait_ready()
            except McpFailure as failure:
                pooled.release()
                # An open started by another caller ran out of *its* time: this call may
                # still have some, to open a session of its own.
                if fresh or failure.reason != "timeout" or time.monotonic() >= deadline:
                    raise
                continue
            except BaseException:
                pooled.release()
                raise
            return pooled, fresh

    def _start(self, key: SessionKey, headers: dict[str, str], deadline: float) -> PooledSession:
        stale = self._sessions.pop(key, None)
        if stale is not None:
            self._retire(stale)
        while len(self._sessions) >= self._max_sessions:
            # The least recently used idle session, else the least recently used one.
            victim = next((k for k, s in self._sessions.items() if s.users == 0), None)
            self._retire(self._sessions.pop(victim or next(iter(self._sessions))))
        pooled = PooledSession(
            key,
            headers,
            allow_private=self._allow_private,
            idle_seconds=self._idle_seconds,
            open_deadline=deadline,
            on_exit=self._forget,
        )
        self._sessions[key] = pooled
        return pooled

    def _retire(self, pooled: PooledSession) -> None:
        pooled.retire()
        self._retired.add(pooled)

    def _forget(self, pooled: PooledSession) -> None:
        if self._sessions.get(pooled.key) is pooled:
            del self._sessions[pooled.key]
        self._retired.discard(pooled)

    def _remember(self, server: str, transport: Transport) -> None:
        if transport == "sse":
            self._legacy[server] = None
            self._legacy.move_to_end(server)
            while len(self._legacy) > _REMEMBERED_URLS:
                self._legacy.popitem(last=False)
        else:
            self._legacy.pop(server, None)
