"""The outermost request middleware (pure ASGI, so it costs little on the hot path).

It gives every request an id (`x-request-id`, echoed when the caller sent a sane one), puts it
in the logging context, enforces the request size limit, turns an unhandled exception into a
JSON 500, writes one access log line and records the route's metrics.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from maestrale.core.errors import INTERNAL_ERROR, error_body
from maestrale.core.logs import request_id_var
from maestrale.core.metrics import Metrics

log = logging.getLogger("maestrale.access")
errlog = logging.getLogger("maestrale.errors")

_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def _route_of(scope: Scope) -> str:
    """The matched route's template (bounded label cardinality), with its router prefixes.

    FastAPI keeps the prefixed template of an included route in its own scope entry; the route
    object itself only knows the path it was declared with.
    """
    context = scope.get("fastapi", {}).get("effective_route_context")
    path = getattr(context, "path", None) or getattr(scope.get("route"), "path", None)
    return path if isinstance(path, str) else "<unmatched>"


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics, max_request_bytes: int) -> None:
        self.app = app
        self.metrics = metrics
        self.max_request_bytes = max_request_bytes

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
            if content_length is not None and _too_large(content_length, self.max_request_bytes):
                body = error_body(
                    f"request body exceeds {self.max_request_bytes} bytes",
                    "invalid_request_error",
                    "payload_too_large",
                )
                await _send_json(send_with_id, 413, body)
            elif "\x00" in scope["path"] or b"%00" in scope["query_string"]:
                # No stored text may hold NUL (Postgres refuses it): refuse it at the edge.
                body = error_body(
                    "the URL must not contain NUL characters",
                    "invalid_request_error",
                    "invalid_url",
                )
                await _send_json(send_with_id, 400, body)
            else:
                await self.app(scope, receive, send_with_id)
        except Exception:
            errlog.exception("unhandled error on %s %s", scope["method"], scope["path"])
            if not state["started"]:
                await _send_json(send_with_id, 500, INTERNAL_ERROR)
        finally:
            elapsed = time.perf_counter() - started
            route = _route_of(scope)
            self.metrics.observe(scope["method"], route, state["status"], elapsed)
            log.info(
                "%s %s %s",
                scope["method"],
                scope["path"],
                state["status"],
                extra={"status": state["status"], "duration_ms": round(elapsed * 1000, 3)},
            )
            request_id_var.reset(token)


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
