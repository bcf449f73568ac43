"""Stored spans back into OTLP JSON (the protobuf JSON mapping of `ResourceSpans`): hex trace and
span ids, 64-bit integers as decimal strings, enums by name, camelCase keys. Spans are grouped by
their resource, then by their instrumentation scope, as an exporter would have sent them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from maestrale.telemetry.tables import TelemetrySpan

_STATUS = {"Ok": "STATUS_CODE_OK", "Error": "STATUS_CODE_ERROR"}


def any_value(value: Any) -> dict[str, Any]:
    """An OTLP `AnyValue` for a stored (typed JSON) attribute value."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(item) for item in value]}}
    if isinstance(value, dict):
        # A map as its JSON text: the trace clients (3.x's TempoTraceAttribute) know no kvlist.
        return {"stringValue": orjson.dumps(value).decode()}
    return {}


def key_values(attributes: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": key, "value": any_value(value)} for key, value in (attributes or {}).items()]


def _event(event: Any) -> dict[str, Any] | None:
    if not isinstance(event, dict):
        return None
    return {
        "name": str(event.get("name") or ""),
        "timeUnixNano": str(int(event.get("time_ns") or 0)),
        "attributes": key_values(event.get("attributes")),
    }


def _link(link: Any) -> dict[str, Any] | None:
    if not isinstance(link, dict):
        return None
    return {
        "traceId": str(link.get("trace_id") or ""),
        "spanId": str(link.get("span_id") or ""),
        "attributes": key_values(link.get("attributes")),
    }


def otlp_span(span: TelemetrySpan) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "kind": span.kind or "SPAN_KIND_UNSPECIFIED",
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns),
        "attributes": key_values(span.attributes),
        "events": [e for e in map(_event, span.events or ()) if e is not None],
    }
    if span.parent_span_id:
        out["parentSpanId"] = span.parent_span_id
    if span.trace_state:
        out["traceState"] = span.trace_state
    links = [link for link in map(_link, span.links or ()) if link is not None]
    if links:
        out["links"] = links
    if span.status_code in _STATUS:
        out["status"] = {"code": _STATUS[span.status_code], "message": span.status_message}
    return out


def resource_spans(spans: Iterable[TelemetrySpan]) -> list[dict[str, Any]]:
    """The spans as OTLP `ResourceSpans`, one per distinct resource, in order of first span."""
    batches: dict[bytes, dict[tuple[str, str], list[dict[str, Any]]]] = {}
    resources: dict[bytes, dict[str, Any]] = {}
    for span in spans:
        key = orjson.dumps(span.resource_attributes or {}, option=orjson.OPT_SORT_KEYS)
        resources.setdefault(key, span.resource_attributes or {})
        scopes = batches.setdefault(key, {})
        scopes.setdefault((span.scope_name, span.scope_version), []).append(otlp_span(span))
    return [
        {
            "resource": {"attributes": key_values(resources[key])},
            "scopeSpans": [
                {"scope": {"name": name, "version": version}, "spans": items}
                for (name, version), items in scopes.items()
            ],
        }
        for key, scopes in batches.items()
    ]


def tempo_trace(spans: Sequence[TelemetrySpan]) -> dict[str, Any]:
    """The trace in the envelope the workflows API answers (Tempo's `{"batches": [...]}`)."""
    return {"batches": resource_spans(spans)}
