"""A process's tracing: its own tracer provider (not OpenTelemetry's global one, so that nothing
else in the process is traced by accident), a batching OTLP/HTTP exporter, and the W3C trace
context propagator. Imported only when tracing is configured (the `otel` extra)."""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, AsyncIterator, MutableMapping
from contextvars import Token
from types import TracebackType
from typing import TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from maestrale import __version__
from maestrale.tracing.spans import Attribute, TokenCount

T = TypeVar("T")

SERVICE_NAME = "maestrale"
# The gateway's endpoints as gen_ai.operation.name values (others are passed on as they are).
_OPERATIONS = {"chat": "chat", "fim": "text_completion", "embeddings": "embeddings"}
_EMPTY = Context()  # the parent of a root span (a job's), whatever is current


class LiveSpan:
    """One span: a `with` block runs inside it (it is the current span there), or a stream's
    steps do (`follow`, then `end`). A failure sets the span's status and `error.type` to the
    exception's class, never its message (an upstream's error text may quote a prompt)."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: Span) -> None:
        self._span = span
        self._token: Token[Context] | None = None

    def __enter__(self) -> LiveSpan:
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if kind is not None and not issubclass(kind, GeneratorExit):
            self._fail(kind.__name__)
        self._span.end()
        if self._token is not None:
            otel_context.detach(self._token)
            self._token = None

    def _fail(self, error: str) -> None:
        self._span.set_attribute("error.type", error)
        self._span.set_status(Status(StatusCode.ERROR, error))

    def set(self, key: str, value: Attribute) -> None:
        self._span.set_attribute(key, value)

    def tokens(self, usage: TokenCount | None) -> None:
        if usage is not None:
            self._span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
            self._span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)

    def follow(self, items: AsyncIterator[T]) -> AsyncIterator[T]:
        return _inside(trace.set_span_in_context(self._span), items)

    def end(self, status: int) -> None:
        if status >= 400:
            self._fail(str(status))
        self._span.end()


async def _inside(ctx: Context, items: AsyncIterator[T]) -> AsyncGenerator[T, None]:
    # Attached for each step only: between steps the consumer runs in its own context (a
    # streamed response is read by another task than the one that started it).
    try:
        while True:
            token = otel_context.attach(ctx)
            try:
                item = await anext(items)
            except StopAsyncIteration:
                return
            finally:
                otel_context.detach(token)
            yield item
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()


class Tracing:
    """The tracer of one process, exporting to `endpoint` (None: the OTEL_EXPORTER_OTLP_*
    environment variables). Sampling follows OTEL_TRACES_SAMPLER (default: every trace, and a
    caller's sampled flag); export batching follows OTEL_BSP_*."""

    def __init__(self, endpoint: str | None) -> None:
        attributes: dict[str, str] = {"service.version": __version__}
        if not os.environ.get("OTEL_SERVICE_NAME"):
            attributes["service.name"] = SERVICE_NAME
        self.provider = TracerProvider(resource=Resource.create(attributes))
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        self.tracer = self.provider.get_tracer("maestrale", __version__)
        self.propagator = TraceContextTextMapPropagator()

    def shutdown(self) -> None:
        """Export what is pending and stop (blocks: call it off the event loop)."""
        self.provider.shutdown()

    def internal(self, name: str) -> LiveSpan:
        return LiveSpan(self.tracer.start_span(name))

    def engine(self, operation: str, model: str, provider: str) -> LiveSpan:
        op = _OPERATIONS.get(operation, operation)
        attributes = {
            "gen_ai.operation.name": op,
            "gen_ai.request.model": model,
            "gen_ai.provider.name": provider,
        }
        span = self.tracer.start_span(f"{op} {model}", kind=SpanKind.CLIENT, attributes=attributes)
        return LiveSpan(span)

    def job(self, kind: str, job_id: str, attempt: int) -> LiveSpan:
        attributes: dict[str, Attribute] = {
            "maestrale.job.kind": kind,
            "maestrale.job.id": job_id,
            "maestrale.job.attempt": attempt,
        }
        span = self.tracer.start_span(
            f"job {kind}", context=_EMPTY, kind=SpanKind.CONSUMER, attributes=attributes
        )
        return LiveSpan(span)

    def inject(self, headers: MutableMapping[str, str]) -> None:
        """The current span's `traceparent` (and `tracestate`) into `headers`."""
        self.propagator.inject(headers)
