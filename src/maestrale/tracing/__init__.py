"""OpenTelemetry traces, exported over OTLP/HTTP (the `otel` extra).

Off unless an endpoint is configured (`otlp_endpoint`, or the standard
OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); off, nothing of OpenTelemetry
is imported and each call site costs one context variable read. On:

- a server span per HTTP request (`asgi`), joining the caller's W3C `traceparent`;
- child spans for authentication, the limits, each engine call (gen_ai.* attributes) and each
  database statement (`database`: its text without parameters);
- a root span per job attempt in the worker;
- `traceparent` passed on to every upstream: OpenAI-compatible engines, connectors, fetched URLs
  (with the trigger depth of triggered work, traced or not: `at_trigger_depth`).

Call sites use the helpers below (`spans`); `setup` turns tracing on.
"""

from maestrale.tracing.spans import (
    NO_SPAN,
    TRIGGER_DEPTH_HEADER,
    SpanScope,
    at_trigger_depth,
    engine_span,
    inject,
    job_span,
    outbound_headers,
    span,
)

__all__ = [
    "NO_SPAN",
    "TRIGGER_DEPTH_HEADER",
    "SpanScope",
    "at_trigger_depth",
    "engine_span",
    "inject",
    "job_span",
    "outbound_headers",
    "span",
]
