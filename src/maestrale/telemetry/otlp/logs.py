"""An ExportLogsServiceRequest into rows of `telemetry_logs`.

A record's time is its own, else its observed time, else the time it was received (OTLP allows
both unset). A time more than a day ahead of the server's clock, or a trace or span id of the
wrong length, rejects the record (counted in the partial success)."""

from __future__ import annotations

from typing import Any

import orjson
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from maestrale.telemetry.otlp.genai import INT64_MAX, NAME, log_columns
from maestrale.telemetry.otlp.records import Decoded, Owner, Rejected, check_time
from maestrale.telemetry.otlp.values import Limits, attributes, text, value


def log_rows(
    request: ExportLogsServiceRequest, owner: Owner, limits: Limits, now_ns: int
) -> Decoded:
    decoded = Decoded()
    tenant = owner.columns()
    for resource_logs in request.resource_logs:
        resource, _ = attributes(
            resource_logs.resource.attributes,
            limits,
            dropped=resource_logs.resource.dropped_attributes_count,
        )
        service = resource.get("service.name")
        shared: dict[str, Any] = {
            **tenant,
            "service_name": str(service)[:NAME] if isinstance(service, str) else "",
            "resource_schema_url": text(resource_logs.schema_url, limits)[:1024],
            "resource_attributes": resource,
        }
        for scope_logs in resource_logs.scope_logs:
            scope, _ = attributes(
                scope_logs.scope.attributes,
                limits,
                dropped=scope_logs.scope.dropped_attributes_count,
            )
            in_scope = {
                **shared,
                "scope_schema_url": text(scope_logs.schema_url, limits)[:1024],
                "scope_name": text(scope_logs.scope.name, limits)[:NAME],
                "scope_version": text(scope_logs.scope.version, limits)[:NAME],
                "scope_attributes": scope,
            }
            for record in scope_logs.log_records:
                try:
                    row = _row(record, limits, now_ns)
                except Rejected as exc:
                    decoded.reject(str(exc))
                    continue
                row.update(in_scope)
                decoded.rows.append(row)
    return decoded


def _id(raw: bytes, size: int, what: str) -> str:
    # Optional in a log record: empty, or of its exact length.
    if raw and len(raw) != size:
        raise Rejected(f"{what} must be {size} bytes, not {len(raw)}")
    return raw.hex() if any(raw) else ""


def _row(record: LogRecord, limits: Limits, now_ns: int) -> dict[str, Any]:
    observed = check_time(record.observed_time_unix_nano, now_ns, "observed_time_unix_nano")
    timestamp = check_time(record.time_unix_nano, now_ns, "time_unix_nano")
    attrs, _ = attributes(record.attributes, limits, dropped=record.dropped_attributes_count)
    return {
        "timestamp_ns": timestamp or observed or now_ns,
        "observed_ns": observed,
        "trace_id": _id(record.trace_id, 16, "trace_id"),
        "span_id": _id(record.span_id, 8, "span_id"),
        "trace_flags": record.flags & 0x7FFFFFFF,
        "severity_text": text(record.severity_text, limits)[:32],
        "severity_number": min(max(int(record.severity_number), 0), INT64_MAX) & 0x7FFFFFFF,
        "body": _body(record, limits),
        "event_name": text(record.event_name, limits)[:NAME],
        "attributes": attrs,
        **log_columns(attrs),
    }


def _body(record: LogRecord, limits: Limits) -> str:
    """The body as text: a string as it is, anything else as its JSON."""
    if not record.HasField("body"):
        return ""
    body = value(record.body, limits)
    if isinstance(body, str):
        return body
    if body is None:
        return ""
    return text(orjson.dumps(body).decode("utf-8"), limits)
