"""The HTTP layer under the MCP transports: an SSRF-guarded `httpx2` client whose transport is
wrapped to see what the SDK's transports hide, and to bound what a hostile server can make us
hold.

The streamable HTTP transport turns an HTTP error into a synthetic JSON-RPC error (the status,
`WWW-Authenticate` and the socket error are lost) and the SSE transport logs it; `HttpWatch`
keeps them so a failure can be reported as "unauthorized" with its `resource_metadata`,
"session expired" or "unreachable". Each request gets timeouts from the deadline of the call it
belongs to, so a POST the caller gave up on cannot linger on the pooled connection forever.

A large answer is never parsed on the event loop (`_OffloadingStream`): the SDK would validate it
into pydantic models in one native call that holds the GIL, seconds for a few megabytes, during
which the whole server stands still. Its JSON is read in a worker thread, its `result` kept aside
(`HttpWatch.offloaded`) and the SDK handed a stub result that names it; the caller then turns
the kept result into its answer item by item in a worker thread (`results`), where each step is
short enough for the event loop to get the GIL back in between.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import httpx2
import orjson

from maestrale.connectors.http import guarded_client

# A POST's answer (a JSON body, or the event stream of one request) larger than this is refused.
MAX_BODY_BYTES = 8 * 1024 * 1024
CONNECT_TIMEOUT = 10.0
# Added to a call's deadline for the requests of that call: the courtesy `notifications/cancelled`
# is sent after the deadline and must still get through.
GRACE_SECONDS = 5.0
DELETE_TIMEOUT = 5.0
# An answer (a JSON body, or one event of an event stream) larger than this is parsed off the
# event loop: below it, the SDK's own parse takes a few milliseconds.
OFFLOAD_BYTES = 64 * 1024
# The `_meta` key of a stub result: the token of the result kept aside.
OFFLOADED = "io.maestrale/offloaded"
# Results kept aside per session and not yet taken (a caller cancelled in between leaves one).
_MAX_OFFLOADED = 64


@dataclass
class CallScope:
    """One call (or one session's opening): its deadline (time.monotonic()), and what the HTTP
    answers to its POSTs said that the SDK does not pass on."""

    deadline: float | None
    status: int | None = None
    too_large: bool = False


# The scope of the call a request belongs to. A ContextVar, not shared state: the MCP SDK runs
# each message's HTTP request in a copy of the sender's context, so this is how a request learns
# which call (and which time budget) it serves, and how the call learns what its POSTs got.
CALL_SCOPE: ContextVar[CallScope | None] = ContextVar("mcp_call_scope", default=None)

_RESOURCE_METADATA = re.compile(r'resource_metadata\s*=\s*(?:"([^"]*)"|([^\s,]+))', re.IGNORECASE)
_MAX_URL = 2048


class ResponseTooLarge(httpx2.StreamError):
    """An answer to a POST over `MAX_BODY_BYTES`, or compressed (a StreamError: the streamable
    transport turns it into an error of that one request instead of ending the session)."""


def resource_metadata_of(challenges: list[str]) -> str | None:
    """The RFC 9728 `resource_metadata` URL of a Bearer challenge, if it is an http(s) URL."""
    for challenge in challenges:
        found = _RESOURCE_METADATA.search(challenge)
        if found is None:
            continue
        url = found.group(1) if found.group(1) is not None else found.group(2)
        if url.startswith(("https://", "http://")) and len(url) <= _MAX_URL:
            return url
    return None


@dataclass
class HttpWatch:
    """What the HTTP answers said about one pooled session, for the failure classifier."""

    first_status: int | None = None
    auth_status: int | None = None
    resource_metadata: str | None = None
    expired: bool = False
    transport_error: httpx2.TransportError | None = None
    on_fatal: Callable[[], None] | None = None
    # Large results parsed off the loop, by the token their stub names (see the module doc).
    offloaded: OrderedDict[str, dict[str, Any]] = field(default_factory=OrderedDict)

    def keep(self, token: str, result: dict[str, Any]) -> None:
        """Keep `result` aside under `token`, the name its stub gives it."""
        self.offloaded[token] = result
        while len(self.offloaded) > _MAX_OFFLOADED:
            self.offloaded.popitem(last=False)

    def saw(self, request: httpx2.Request, response: httpx2.Response, *, legacy_sse: bool) -> None:
        """Record a response; a credential refusal or an expired session ends the session, and so
        does any refused POST of the legacy SSE transport (which would otherwise leave the
        request waiting for an answer that never comes)."""
        status = response.status_code
        if self.first_status is None:
            self.first_status = status
        if status < 300:
            return
        scope = CALL_SCOPE.get()
        if scope is not None and request.method == "POST":
            scope.status = status
        fatal = legacy_sse and request.method == "POST" and status >= 400
        if status in (401, 403):
            self.auth_status = status
            self.resource_metadata = resource_metadata_of(
                response.headers.get_list("www-authenticate")
            )
            fatal = True
        elif status == 404 and ("mcp-session-id" in request.headers or fatal):
            # An unknown session: the streamable transport names it in a header, the legacy
            # SSE one in the query of its message URL.
            self.expired = True
            fatal = True
        if fatal and self.on_fatal is not None:
            self.on_fatal()


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, scope: CallScope | None, encoded: bool):
        self._inner = inner
        self._scope = scope
        self._encoded = encoded

    def _refuse(self, message: str) -> ResponseTooLarge:
        if self._scope is not None:
            self._scope.too_large = True
        return ResponseTooLarge(message)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._encoded:
            # We ask for identity; a compressed body could expand past any byte limit.
            raise self._refuse("the MCP server sent a compressed body it was not asked for")
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > MAX_BODY_BYTES:
                raise self._refuse(f"the MCP server's answer is over {MAX_BODY_BYTES} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _stub_of(data: bytes, token: str) -> tuple[dict[str, Any], bytes] | None:
    """In a worker thread: the result of a JSON-RPC answer of tools/call or tools/list, and the
    answer with a stub naming `token` in its place; None for anything else, left to the SDK as
    it is."""
    try:
        message = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(message, dict) or "id" not in message:
        return None
    result = message.get("result")
    if not isinstance(result, dict):
        return None
    if isinstance(result.get("content"), list):
        stub: dict[str, Any] = {"content": []}
    elif isinstance(result.get("tools"), list):
        stub = {"tools": []}
        if isinstance(result.get("nextCursor"), str):
            stub["nextCursor"] = result["nextCursor"]
    else:
        return None
    stub["_meta"] = {OFFLOADED: token}
    answer = {"jsonrpc": message.get("jsonrpc"), "id": message["id"], "result": stub}
    return result, orjson.dumps(answer)


class _OffloadingStream(httpx2.AsyncByteStream):
    """The answer to a POST as the SDK reads it, with a large result swapped for a stub (see the
    module doc): the whole body of a JSON answer, each event of an event stream."""

    def __init__(self, inner: httpx2.AsyncByteStream, watch: HttpWatch, *, sse: bool) -> None:
        self._inner = inner
        self._watch = watch
        self._sse = sse

    async def _swapped(self, data: bytes) -> bytes | None:
        if len(data) <= OFFLOAD_BYTES:
            return None
        token = secrets.token_urlsafe(16)
        found = await asyncio.to_thread(_stub_of, data, token)
        if found is None:
            return None
        result, stub = found
        self._watch.keep(token, result)
        return stub

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if not self._sse:
            body = b"".join([chunk async for chunk in self._inner])
            yield await self._swapped(body) or body
            return
        # Events end with a blank line; lines end with CRLF, LF or CR (made LF here, each chunk
        # once: a CR last may be the first half of a CRLF, so it waits for the next chunk).
        pending = bytearray()
        scanned = 0
        carried = b""
        async for received in self._inner:
            chunk = carried + received
            carried = b"\r" if chunk.endswith(b"\r") else b""
            pending += (
                chunk[: len(chunk) - len(carried)].replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            )
            while (end := pending.find(b"\n\n", max(scanned - 1, 0))) >= 0:
                event = bytes(pending[:end])
                del pending[: end + 2]
                scanned = 0
                yield await self._event(event) + b"\n\n"
            scanned = len(pending)
        pending += b"\n" if carried else b""
        if pending:
            yield bytes(pending)

    async def _event(self, event: bytes) -> bytes:
        lines = event.split(b"\n")
        data = [line[5:].removeprefix(b" ") for line in lines if line.startswith(b"data:")]
        if sum(len(part) for part in data) <= OFFLOAD_BYTES:
            return event
        swapped = await self._swapped(b"\n".join(data))
        if swapped is None:
            return event
        kept = [line for line in lines if not line.startswith(b"data:")]
        return b"\n".join([*kept, b"data: " + swapped])

    async def aclose(self) -> None:
        await self._inner.aclose()


class WatchedTransport(httpx2.AsyncBaseTransport):
    """Wraps the guarded transport: per-call timeouts, the watch, the size limit of answers."""

    def __init__(
        self, inner: httpx2.AsyncBaseTransport, watch: HttpWatch, *, legacy_sse: bool
    ) -> None:
        self._inner = inner
        self._watch = watch
        self._legacy_sse = legacy_sse

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        scope = CALL_SCOPE.get()
        request.extensions["timeout"] = _timeouts(request.method, scope)
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            # Kept before it unwinds the SDK's task group, so that the callers woken by the
            # closed connection can tell "never reached the server" from "lost the answer".
            self._watch.transport_error = exc
            raise
        self._watch.saw(request, response, legacy_sse=self._legacy_sse)
        if request.method == "POST":
            # Only POSTs: a GET is the session's event stream, as long as the session.
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            capped = _CappedStream(response.stream, scope, encoded=encoding not in ("", "identity"))
            media = response.headers.get("content-type", "").partition(";")[0].strip().lower()
            if media in ("application/json", "text/event-stream"):
                response.stream = _OffloadingStream(
                    capped, self._watch, sse=media == "text/event-stream"
                )
            else:
                response.stream = capped
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def _timeouts(method: str, scope: CallScope | None) -> dict[str, float | None]:
    if method == "DELETE":
        return dict.fromkeys(("connect", "read", "write", "pool"), DELETE_TIMEOUT)
    if method == "GET" or scope is None or scope.deadline is None:
        # A GET is the server's event stream: it may stay quiet as long as the session is open.
        return {"connect": CONNECT_TIMEOUT, "read": None, "write": None, "pool": None}
    left = max(scope.deadline - time.monotonic(), 0.0) + GRACE_SECONDS
    return {"connect": min(left, CONNECT_TIMEOUT), "read": left, "write": left, "pool": left}


def watched_client(
    *, allow_private: bool, headers: Mapping[str, str], watch: HttpWatch, legacy_sse: bool
) -> httpx2.AsyncClient:
    """A guarded client for one pooled session, reporting to `watch`."""
    sent: dict[str, Any] = {k: v for k, v in headers.items() if k.lower() != "accept-encoding"}
    # Compressed answers are refused (see _CappedStream): the size limit counts what we hold.
    sent["Accept-Encoding"] = "identity"
    client = guarded_client(allow_private=allow_private, timeout=CONNECT_TIMEOUT, headers=sent)
    # guarded_client builds its own transport; wrapping it is the one way in that keeps its guard.
    inner = client._transport
    assert isinstance(inner, httpx2.AsyncBaseTransport)
    client._transport = WatchedTransport(inner, watch, legacy_sse=legacy_sse)
    return client
