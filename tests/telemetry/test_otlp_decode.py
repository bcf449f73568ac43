"""The two OTLP encodings decode to the same rows (the JSON path converts attributes by hand)."""

from __future__ import annotations

import orjson
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from maestrale.config.telemetry import TelemetrySettings
from maestrale.telemetry.ingest import decode
from maestrale.telemetry.otlp.records import Owner
from tests.telemetry import otlp_data as otlp

OWNER = Owner("org", "ws", "user", "")
RICH = {
    "s": "text",
    "b": False,
    "i": -(2**63),
    "f": 2.5,
    "nan": float("nan"),
    "raw": b"\x00\xff",
    "list": [1, "two", [3.0]],
    "map": {"k": {"deep": True}},
    "gen_ai.usage.input_tokens": 2**40,
}


def test_json_and_protobuf_decode_alike() -> None:
    span = otlp.span("1111111111111111", "rich", parent="2222222222222222", attributes=RICH)
    event = span.events.add(time_unix_nano=otlp.NOW, name="retry")
    event.attributes.append(otlp.kv("attempt", 2))
    link = span.links.add(trace_id=bytes.fromhex(otlp.TRACE), span_id=bytes.fromhex("3" * 16))
    link.attributes.append(otlp.kv("why", "follows"))
    decoded = {}
    for kind, data, message in (
        ("traces", otlp.traces(span), None),
        ("logs", otlp.logs({"x": [1, 2]}, "plain"), ExportLogsServiceRequest),
    ):
        document = otlp.as_json(data) if message is None else otlp.as_json(data, message)
        settings = TelemetrySettings()
        _, binary, _ = decode(kind, data, "application/x-protobuf", None, OWNER, settings)
        _, textual, _ = decode(
            kind, orjson.dumps(document), "application/json", None, OWNER, settings
        )
        assert binary.rows and binary.rows == textual.rows
        decoded[kind] = binary.rows
    [row] = decoded["traces"]
    assert row["attributes"]["nan"] == "nan" and row["attributes"]["raw"] == "AP8="
    assert row["usage_input_tokens"] == 2**40 and row["links"][0]["span_id"] == "3" * 16
    assert [log["body"] for log in decoded["logs"]] == ['{"x":[1,2]}', "plain"]
