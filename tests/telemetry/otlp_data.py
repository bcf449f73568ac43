"""OTLP export requests for the telemetry tests, built with opentelemetry-proto's messages."""

from __future__ import annotations

import time
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import SEVERITY_NUMBER_INFO, LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

TRACE = "5b8efff798038103d269b633813fc60c"
NOW = time.time_ns()
MS = 1_000_000


def any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, list):
        out = AnyValue()
        out.array_value.values.extend(any_value(v) for v in value)
        return out
    if isinstance(value, dict):
        out = AnyValue()
        out.kvlist_value.values.extend(kv(k, v) for k, v in value.items())
        return out
    return AnyValue(string_value=str(value))


def kv(key: str, value: Any) -> KeyValue:
    return KeyValue(key=key, value=any_value(value))


def span(
    span_id: str,
    name: str,
    *,
    parent: str = "",
    start_ms: int = 0,
    duration_ms: int = 10,
    attributes: dict[str, Any] | None = None,
    error: bool = False,
    trace_id: str = TRACE,
) -> Span:
    start = NOW + start_ms * MS
    out = Span(
        trace_id=bytes.fromhex(trace_id),
        span_id=bytes.fromhex(span_id),
        parent_span_id=bytes.fromhex(parent),
        name=name,
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=start,
        end_time_unix_nano=start + duration_ms * MS,
    )
    out.attributes.extend(kv(k, v) for k, v in (attributes or {}).items())
    if error:
        out.status.code = Status.STATUS_CODE_ERROR
        out.status.message = "boom"
    return out


def traces(*spans: Span, service: str = "shop", environment: str = "prod") -> bytes:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend(
        [kv("service.name", service), kv("deployment.environment.name", environment)]
    )
    scope = resource_spans.scope_spans.add()
    scope.scope.name = "tests"
    scope.spans.extend(spans)
    return request.SerializeToString()


def as_json(data: bytes, message: type[Any] = ExportTraceServiceRequest) -> dict[str, Any]:
    """OTLP/JSON of a protobuf body: hex ids, as the OTLP JSON mapping writes them."""
    parsed = message()
    parsed.ParseFromString(data)
    document: dict[str, Any] = json_format.MessageToDict(parsed)
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for item in scope.get("spans", []):
                for node in (item, *item.get("links", [])):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in node:
                            node[key] = _b64_to_hex(node[key])
    for resource in document.get("resourceLogs", []):
        for scope in resource.get("scopeLogs", []):
            for item in scope.get("logRecords", []):
                for key in ("traceId", "spanId"):
                    if key in item:
                        item[key] = _b64_to_hex(item[key])
    return document


def _b64_to_hex(value: str) -> str:
    import base64

    return base64.b64decode(value).hex()


def logs(*bodies: Any, trace_id: str = TRACE, **attributes: Any) -> bytes:
    request = ExportLogsServiceRequest()
    resource_logs = request.resource_logs.add()
    resource_logs.resource.attributes.append(kv("service.name", "shop"))
    scope = resource_logs.scope_logs.add()
    scope.scope.name = "tests.logs"
    for i, body in enumerate(bodies):
        record = LogRecord(
            time_unix_nano=NOW + i,
            severity_text="INFO",
            severity_number=SEVERITY_NUMBER_INFO,
            trace_id=bytes.fromhex(trace_id),
            span_id=bytes.fromhex("00f067aa0ba902b7"),
            body=any_value(body),
        )
        record.attributes.append(kv("n", i))
        record.attributes.extend(kv(key, value) for key, value in attributes.items())
        scope.log_records.append(record)
    return request.SerializeToString()
