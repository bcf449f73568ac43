"""An OTLP export, from its body to the queue, and its answer (the export response of its kind,
in the request's format, with OTLP's partial success when records were rejected)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from maestrale.config.telemetry import TelemetrySettings
from maestrale.core.errors import TooManyRequests
from maestrale.telemetry.otlp import body
from maestrale.telemetry.otlp.logs import log_rows
from maestrale.telemetry.otlp.records import Decoded, Owner
from maestrale.telemetry.otlp.spans import span_rows
from maestrale.telemetry.otlp.values import Limits
from maestrale.telemetry.queue import Batch, IngestQueue

# Bodies past this many bytes are decoded on a thread, the event loop serving meanwhile. Measured
# (bench/traces/decode.py, on a loaded 2-core machine): protobuf ~100-200 us a span of 18
# attributes (~4 MB/s), OTLP/JSON ~1.5 ms a span (json_format is pure Python): a 16 KiB protobuf
# body holds the loop ~3 ms, a JSON one ~20 ms.
OFF_LOOP_BYTES = {body.PROTOBUF: 16 * 1024, body.JSON: 2 * 1024}
RETRY_AFTER_SECONDS = 5


@dataclass(frozen=True, slots=True)
class Answer:
    """The export response's bytes and content type."""

    content: bytes
    media_type: str


def limits_of(settings: TelemetrySettings) -> Limits:
    return Limits(
        max_count=settings.telemetry_max_attributes,
        max_length=settings.telemetry_max_attribute_length,
        max_depth=settings.telemetry_max_attribute_depth,
    )


def decode(
    kind: str,
    raw: bytes,
    content_type: str | None,
    encoding: str | None,
    owner: Owner,
    settings: TelemetrySettings,
) -> tuple[str, Decoded, int]:
    """(the body's media type, its rows, and for metrics the data points counted); raises the
    4xx of a body that cannot be read."""
    media = body.media_type(content_type)
    data = body.gunzip(raw, encoding, settings.telemetry_max_decompressed_bytes)
    message = body.parse(kind, data, media)
    now_ns = time.time_ns()
    limits = limits_of(settings)
    if isinstance(message, ExportTraceServiceRequest):
        return media, span_rows(message, owner, limits, now_ns), 0
    if isinstance(message, ExportLogsServiceRequest):
        return media, log_rows(message, owner, limits, now_ns), 0
    assert isinstance(message, ExportMetricsServiceRequest)
    return media, Decoded(), _data_points(message)


def _data_points(request: ExportMetricsServiceRequest) -> int:
    count = 0
    for resource in request.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                data = metric.WhichOneof("data")
                if data is not None:
                    count += len(getattr(metric, data).data_points)
    return count


async def export(
    kind: str,
    raw: bytes,
    content_type: str | None,
    encoding: str | None,
    owner: Owner,
    settings: TelemetrySettings,
    queue: IngestQueue,
) -> tuple[Answer, int]:
    """Decode an export request and queue its rows; the answer, and the metric data points
    received (metrics are counted, not stored). 429 when the queue is full."""
    args = (kind, raw, content_type, encoding, owner, settings)
    if len(raw) > OFF_LOOP_BYTES.get(body.media_type(content_type), 0):
        media, decoded, points = await asyncio.to_thread(decode, *args)
    else:
        media, decoded, points = decode(*args)
    batch = Batch(spans=decoded.rows) if kind == "traces" else Batch(logs=decoded.rows)
    if not queue.offer(batch):
        raise TooManyRequests(
            "the telemetry store is busy: retry later",
            code="telemetry_queue_full",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    return answer(kind, media, decoded), points


def answer(kind: str, media: str, decoded: Decoded) -> Answer:
    response: Message
    if kind == "traces":
        response = ExportTraceServiceResponse()
        if decoded.rejected:
            response.partial_success.rejected_spans = decoded.rejected
    elif kind == "logs":
        response = ExportLogsServiceResponse()
        if decoded.rejected:
            response.partial_success.rejected_log_records = decoded.rejected
    else:
        response = ExportMetricsServiceResponse()
    if decoded.rejected:
        response.partial_success.error_message = decoded.error
    if media == body.PROTOBUF:
        return Answer(response.SerializeToString(), body.PROTOBUF)
    text = json_format.MessageToJson(response, indent=None)
    return Answer(text.encode("utf-8"), body.JSON)
