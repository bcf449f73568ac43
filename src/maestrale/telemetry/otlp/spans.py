"""An ExportTraceServiceRequest into rows of `telemetry_spans`.

A span with an invalid trace or span id (wrong length, zeros), no start time, or a start or end
more than a day ahead of the server's clock is rejected (counted in the partial success); an end
before the start is clamped to the start (a span of zero duration: the record stays usable)."""

from __future__ import annotations

from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from maestrale.telemetry.otlp import genai
from maestrale.telemetry.otlp.records import (
    MAX_EVENTS,
    MAX_LINKS,
    Decoded,
    Owner,
    Rejected,
    check_time,
    hex_id,
)
from maestrale.telemetry.otlp.values import Limits, attributes, text

_STATUS = {Status.STATUS_CODE_UNSET: "Unset", Status.STATUS_CODE_OK: "Ok"}
_STATUS_ERROR = "Error"


def span_rows(
    request: ExportTraceServiceRequest, owner: Owner, limits: Limits, now_ns: int
) -> Decoded:
    decoded = Decoded()
    tenant = owner.columns()
    for resource_spans in request.resource_spans:
        resource, _ = attributes(
            resource_spans.resource.attributes,
            limits,
            dropped=resource_spans.resource.dropped_attributes_count,
        )
        service = resource.get("service.name")
        service_name = str(service)[: genai.NAME] if isinstance(service, str) else ""
        for scope_spans in resource_spans.scope_spans:
            scope = {
                "scope_name": text(scope_spans.scope.name, limits)[: genai.NAME],
                "scope_version": text(scope_spans.scope.version, limits)[: genai.NAME],
            }
            for span in scope_spans.spans:
                try:
                    row = _row(span, limits, now_ns)
                except Rejected as exc:
                    decoded.reject(str(exc))
                    continue
                row.update(tenant)
                row.update(scope)
                row["service_name"] = service_name
                row["resource_attributes"] = resource
                decoded.rows.append(row)
    return decoded


def _row(span: Span, limits: Limits, now_ns: int) -> dict[str, Any]:
    trace_id = hex_id(span.trace_id, 16, "trace_id")
    span_id = hex_id(span.span_id, 8, "span_id")
    parent = hex_id(span.parent_span_id, 8, "parent_span_id", optional=True)
    if not span.start_time_unix_nano:
        raise Rejected("start_time_unix_nano is missing")
    start = check_time(span.start_time_unix_nano, now_ns, "start_time_unix_nano")
    end = check_time(span.end_time_unix_nano, now_ns, "end_time_unix_nano")
    end = max(end, start)
    attrs, _ = attributes(span.attributes, limits, dropped=span.dropped_attributes_count)
    try:
        kind = Span.SpanKind.Name(span.kind)
    except ValueError:
        kind = "SPAN_KIND_UNSPECIFIED"
    row: dict[str, Any] = {
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_span_id": parent,
        "trace_state": text(span.trace_state, limits),
        "start_ns": start,
        "end_ns": end,
        "duration_ns": end - start,
        "name": text(span.name, limits)[:1024],
        "kind": kind,
        "status_code": _STATUS.get(span.status.code, _STATUS_ERROR),
        "status_message": text(span.status.message, limits),
        "attributes": attrs,
        "events": [_event(e, limits) for e in span.events[:MAX_EVENTS]],
        "links": [_link(link, limits) for link in span.links[:MAX_LINKS]],
    }
    row.update(genai.columns(attrs))
    return row


def _event(event: Span.Event, limits: Limits) -> dict[str, Any]:
    attrs, _ = attributes(event.attributes, limits, dropped=event.dropped_attributes_count)
    return {
        "time_ns": min(event.time_unix_nano, genai.INT64_MAX),
        "name": text(event.name, limits)[:1024],
        "attributes": attrs,
    }


def _link(link: Span.Link, limits: Limits) -> dict[str, Any]:
    attrs, _ = attributes(link.attributes, limits, dropped=link.dropped_attributes_count)
    return {
        # A link is context: a malformed one is kept, its ids as they came.
        "trace_id": link.trace_id[:16].hex(),
        "span_id": link.span_id[:8].hex(),
        "attributes": attrs,
    }
