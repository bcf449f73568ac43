"""The outermost request middleware (pure ASGI, so it costs little on the hot path).

It gives every request an id (`x-request-id`, echoed when the caller sent a sane one), puts it
in the logging context, enforces the request size limits (`BodyLimits`), turns an unhandled
exception into a JSON 500, writes one access log line and records the route's metrics.

A body that a route parses in memory (JSON) is read here first, up to its route's limit, and
refused with a 413 as soon as it passes it (a declared `Content-Length` at once, a chunked body
when its bytes do): a 50 MB array of tiny objects costs a gigabyte once parsed. Uploads (files,
audio) are streamed to storage by their routes, which count their bytes themselves.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from maestrale.core.errors import (
    INTERNAL_ERROR,
    AppError,
    BadRequest,
    HttpErrorRenderer,
    PayloadTooLarge,
)
from maestrale.core.logs import request_id_var
from maestrale.core.metrics import Metrics
from maestrale.tracing.spans import route_of

log = logging.getLogger("maestrale.access")
errlog = logging.getLogger("maestrale.errors")

_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


# The routes that stream their body to storage (and count it) instead of parsing it in memory.
UPLOAD_PATHS = frozenset({"/v1/files", "/v1/audio/transcriptions"})
# Those with a parameter in their path: a library's documents.
UPLOAD_PATTERNS = (re.compile(r"^/v1/libraries/[^/]+/documents$"),)
# In-process proxies (the console's): their inner call to /v1 goes through this middleware again
# and gets its route's limit there, so the outer one streams the body (an upload) untouched.
PROXY_PREFIXES = ("/console/api/",)
_NO_BODY = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True, slots=True)
class BodyLimits:
    """The largest request body of a route, in bytes: `upload` for the streamed uploads,
    `routes` for the paths given there (a document sent inline to OCR), `json` for all others."""

    json: int
    upload: int
    routes: Mapping[str, int] = field(default_factory=dict)
    uploads: frozenset[str] = UPLOAD_PATHS
    upload_patterns: tuple[re.Pattern[str], ...] = UPLOAD_PATTERNS

    def of(self, path: str) -> tuple[int, bool]:
        """The limit of `path`, and whether its route streams the body itself."""
        if path.startswith(PROXY_PREFIXES):
            return self.upload, True
        path = path.rstrip("/") or "/"
        if path in self.uploads or any(p.match(path) for p in self.upload_patterns):
            return self.upload, True
        return self.routes.get(path, self.json), False


class RequestContextMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        metrics: Metrics,
        max_request_bytes: int,
        body_limits: BodyLimits | None = None,
        renderers: Mapping[str, HttpErrorRenderer] | None = None,
    ) -> None:
        self.app = app
        self.metrics = metrics
        # Without `body_limits`, every route has `max_request_bytes`.
        self.limits = body_limits or BodyLimits(json=max_request_bytes, upload=max_request_bytes)
        self.renderers = dict(renderers or {})  # a group's own error body, by path prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = None
        content_length = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                candidate = value.decode("latin-1")
                request_id = candidate if _SANE_ID.match(candidate) else None
            elif name == b"content-length":
                content_length = value
        request_id = request_id or uuid.uuid4().hex
        rid_header = (b"x-request-id", request_id.encode())
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        scope.setdefault("state", {})["started"] = started
        state: dict[str, Any] = {"status": 500, "started": False}

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                state["started"] = True
                message["headers"] = [*message.get("headers", []), rid_header]
            await send(message)

        try:
            limit, streamed = self.limits.of(scope["path"])
            if content_length is not None and _too_large(content_length, limit):
                await self._too_large(scope, receive, send_with_id, limit)
            elif "\x00" in scope["path"] or b"%00" in scope["query_string"]:
                # No stored text may hold NUL (Postgres refuses it): refuse it at the edge.
                error = BadRequest("the URL must not contain NUL characters", code="invalid_url")
                await self._refuse(scope, receive, send_with_id, error)
            elif streamed or scope["method"] in _NO_BODY:
                await self.app(scope, receive, send_with_id)
            elif (first := await _read_body(receive, limit)) is None:
                await self._too_large(scope, receive, send_with_id, limit)
            else:
                await self.app(scope, _replay(first, receive), send_with_id)
        except Exception:
            errlog.exception("unhandled error on %s %s", scope["method"], scope["path"])
            if not state["started"]:
                await _send_json(send_with_id, 500, INTERNAL_ERROR)
        finally:
            elapsed = time.perf_counter() - started
            route = route_of(scope)
            self.metrics.observe(scope["method"], route, state["status"], elapsed)
            log.info(
                "%s %s %s",
                scope["method"],
                scope["path"],
                state["status"],
                extra={"status": state["status"], "duration_ms": round(elapsed * 1000, 3)},
            )
            request_id_var.reset(token)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        error = PayloadTooLarge(f"request body exceeds {limit} bytes, the limit of this route")
        await self._refuse(scope, receive, send, error)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, error: AppError) -> None:
        """Answer `error` before any route runs, in the body of the path's group."""
        path: str = scope["path"]
        for prefix, render in self.renderers.items():
            if path.startswith(prefix) and (response := render(error)) is not None:
                await response(scope, receive, send)
                return
        await _send_json(send, error.status_code, error.body())


async def _read_body(receive: Receive, limit: int) -> Message | None:
    """The request's body as one message, read up to `limit` bytes (None past it). A client
    that went away is passed on as it came."""
    message = await receive()
    if message["type"] != "http.request":
        return message
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        return message if len(body) <= limit else None
    chunks, size = [body], len(body)
    while message.get("more_body", False):
        message = await receive()
        if message["type"] != "http.request":
            return message
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return {"type": "http.request", "body": b"".join(chunks), "more_body": False}


def _replay(first: Message, receive: Receive) -> Receive:
    """`receive` that gives `first` (the body, read already), then what `receive` gives
    (a streamed response waits on it for the client's disconnect)."""
    pending: Message | None = first

    async def replay() -> Message:
        nonlocal pending
        if pending is not None:
            message, pending = pending, None
            return message
        return await receive()

    return replay


def _too_large(raw: bytes, limit: int) -> bool:
    try:
        return int(raw) > limit
    except ValueError:
        return False


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = orjson.dumps(body)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
