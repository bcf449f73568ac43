"""An OTLP/HTTP request body into its protobuf message: `application/x-protobuf` or OTLP's JSON
mapping (`application/json`: ids in hex, enums as ints, 64-bit ints as strings, camelCase keys),
optionally gzipped. A body that cannot be read is refused whole (400, 413, 415): nothing of it is
written. Problems of single records are the decoder's (`spans.py`, `logs.py`): partial success."""

from __future__ import annotations

import base64
import binascii
import zlib
from typing import Any, TypeVar

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from maestrale.core.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from maestrale.telemetry.otlp import jsonattrs

M = TypeVar("M", bound=Message)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
KINDS: dict[str, type[Message]] = {
    "traces": ExportTraceServiceRequest,
    "logs": ExportLogsServiceRequest,
    "metrics": ExportMetricsServiceRequest,
}
# A wrong-length id: what an id that is not hex becomes, for the record's check to reject it.
_INVALID_ID = base64.b64encode(b"\x00").decode("ascii")
_CHUNK = 1 << 20


def media_type(content_type: str | None) -> str:
    """The body's format (PROTOBUF or JSON) from its Content-Type; 415 for any other."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind in (PROTOBUF, JSON):
        return kind
    raise UnsupportedMediaType(
        f"OTLP/HTTP takes {PROTOBUF} or {JSON}, not {kind or 'no content type'!r}",
        code="unsupported_media_type",
    )


def gunzip(raw: bytes, encoding: str | None, max_bytes: int) -> bytes:
    """The body without its Content-Encoding (none or gzip), at most `max_bytes` of it."""
    name = (encoding or "identity").strip().lower()
    if name == "identity":
        return raw
    if name != "gzip":
        raise UnsupportedMediaType(
            f"content encoding {name!r} is not supported (gzip or none)",
            code="unsupported_content_encoding",
        )
    inflate = zlib.decompressobj(wbits=31)
    parts: list[bytes] = []
    size = 0
    data = raw
    try:
        while data and not inflate.eof:
            # Bounded steps: a bomb is stopped after max_bytes, never inflated whole.
            chunk = inflate.decompress(data, _CHUNK)
            size += len(chunk)
            if size > max_bytes:
                raise PayloadTooLarge(
                    f"the body inflates past {max_bytes} bytes", code="payload_too_large"
                )
            parts.append(chunk)
            data = inflate.unconsumed_tail
    except zlib.error as exc:
        raise BadRequest(f"the body is not valid gzip: {exc}", code="invalid_gzip") from None
    if not inflate.eof:
        raise BadRequest("the gzip body is truncated", code="invalid_gzip")
    return b"".join(parts)


def parse(kind: str, data: bytes, media: str) -> Message:
    """The export request of `kind` (traces, logs or metrics) in `data`; 400 when unreadable."""
    message = KINDS[kind]()
    if media == PROTOBUF:
        try:
            message.ParseFromString(data)
        except (DecodeError, RecursionError, ValueError) as exc:
            raise BadRequest(
                f"the body is not a valid OTLP protobuf message: {exc}", code="invalid_protobuf"
            ) from None
        return message
    try:
        document = orjson.loads(data)  # orjson refuses nesting past 1024 levels
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}", code="invalid_json") from None
    if not isinstance(document, dict):
        raise BadRequest("an OTLP JSON body is an object", code="invalid_json")
    _hex_ids(document)
    try:
        taken = jsonattrs.pop_attributes(document, kind) if kind in ("traces", "logs") else []
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
        if taken:
            jsonattrs.put_attributes(message, kind, taken)
    except (json_format.ParseError, RecursionError, ValueError, TypeError) as exc:
        raise BadRequest(
            f"the body is not a valid OTLP JSON message: {_short(exc)}", code="invalid_json"
        ) from None
    return message


def _short(exc: BaseException) -> str:
    message = str(exc)
    return message if len(message) <= 300 else message[:300] + "..."


_ID_KEYS = ("traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id")
_RECORDS = (
    ("resourceSpans", "resource_spans"),
    ("scopeSpans", "scope_spans"),
    ("spans",),
)
_LOG_RECORDS = (
    ("resourceLogs", "resource_logs"),
    ("scopeLogs", "scope_logs"),
    ("logRecords", "log_records"),
)


def _hex_ids(document: dict[str, Any]) -> None:
    """OTLP/JSON's hex ids into the base64 that json_format reads for bytes fields, in place."""
    for path in (_RECORDS, _LOG_RECORDS):
        for record in _walk(document, path):
            _convert(record)
            links = record.get("links")
            if isinstance(links, list):
                for link in links:
                    if isinstance(link, dict):
                        _convert(link)


def _walk(node: Any, path: tuple[tuple[str, ...], ...]) -> list[dict[str, Any]]:
    level: list[Any] = [node]
    for names in path:
        below: list[dict[str, Any]] = []
        for item in level:
            if not isinstance(item, dict):
                continue
            for name in names:
                children = item.get(name)
                if isinstance(children, list):
                    below.extend(c for c in children if isinstance(c, dict))
        level = below
    return level


def _convert(record: dict[str, Any]) -> None:
    for key in _ID_KEYS:
        hex_id = record.get(key)
        if isinstance(hex_id, str):
            record[key] = _hex_to_base64(hex_id)


def _hex_to_base64(hex_id: str) -> str:
    if not hex_id:
        return ""
    try:
        return base64.b64encode(binascii.unhexlify(hex_id)).decode("ascii")
    except (binascii.Error, ValueError):
        return _INVALID_ID
