"""The server span of every HTTP request: the caller's W3C `traceparent` is honoured (the span
joins its trace), and the span carries the method, the route template, the status, the request
id and the caller's organization and workspace; never the query, headers or bodies.

Probes (/health, /ready) and /metrics are not traced. Installed outermost (`install_tracing`),
only when tracing is on. It also runs the app's lifespan with tracing on (the in-process job
worker starts there) and exports what is pending when the lifespan ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from maestrale.tracing.provider import Tracing
from maestrale.tracing.spans import active, route_of

Headers = Sequence[tuple[bytes, bytes]]
_UNMATCHED = "<unmatched>"
# Probes and scrapes: a load balancer's health checks every second would bury the traces.
UNTRACED_PATHS = frozenset({"/health", "/ready", "/metrics"})


class _AsgiHeaders(Getter[Headers]):
    """Reads the propagator's headers (`traceparent`, `tracestate`) from ASGI's header pairs."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        name = key.encode("latin-1")
        values = [value.decode("latin-1") for header, value in carrier if header == name]
        return values or None

    def keys(self, carrier: Headers) -> list[str]:
        return [header.decode("latin-1") for header, _ in carrier]


_GETTER = _AsgiHeaders()


class TracingMiddleware:
    def __init__(self, app: ASGIApp, tracing: Tracing) -> None:
        self.app = app
        self.tracing = tracing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if scope["path"] in UNTRACED_PATHS:
                await self.app(scope, receive, send)
            else:
                await self._request(scope, receive, send)
            return
        if scope["type"] == "lifespan":
            send = lifespan_send(send, self.tracing)
        token = active.set(self.tracing)  # the lifespan's tasks (the job worker) are traced
        try:
            await self.app(scope, receive, send)
        finally:
            active.reset(token)

    async def _request(self, scope: Scope, receive: Receive, send: Send) -> None:
        method: str = scope["method"]
        parent = self.tracing.propagator.extract(scope["headers"], getter=_GETTER)
        span = self.tracing.tracer.start_span(
            method,
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "url.scheme": scope["scheme"]},
        )
        state: dict[str, Any] = {"status": 500}

        async def send_traced(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                state["request_id"] = _header(message.get("headers", ()), b"x-request-id")
            await send(message)

        otel_token = otel_context.attach(trace.set_span_in_context(span, parent))
        token = active.set(self.tracing)
        try:
            await self.app(scope, receive, send_traced)
        finally:
            active.reset(token)
            otel_context.detach(otel_token)
            _finish(span, scope, state)


def lifespan_send(send: Send, tracing: Tracing) -> Send:
    """`send` that exports the pending spans once the app has shut down, before the server is
    told so (it may exit at once then)."""

    async def send_after_flush(message: Message) -> None:
        if message["type"] in ("lifespan.shutdown.complete", "lifespan.shutdown.failed"):
            await asyncio.to_thread(tracing.shutdown)
        await send(message)

    return send_after_flush


def _header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    for header, value in headers:
        if header == name:
            return value.decode("latin-1")
    return None


def _finish(span: trace.Span, scope: Scope, state: dict[str, Any]) -> None:
    route = route_of(scope)
    if route != _UNMATCHED:
        span.update_name(f"{scope['method']} {route}")
        span.set_attribute("http.route", route)
    status: int = state["status"]
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_status(Status(StatusCode.ERROR, str(status)))
        span.set_attribute("error.type", str(status))
    if state.get("request_id"):
        span.set_attribute("maestrale.request_id", state["request_id"])
    principal = scope.get("state", {}).get("principal")
    if principal is not None:
        span.set_attribute("maestrale.organization.id", principal.organization_id)
        if principal.workspace_id is not None:
            span.set_attribute("maestrale.workspace.id", principal.workspace_id)
    span.end()
