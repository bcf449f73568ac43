"""How long the OTLP receiver's decode takes (protobuf and OTLP/JSON), per body size: what decides
which bodies are decoded off the event loop (`telemetry/ingest.py` OFF_LOOP_BYTES).

    .venv/bin/python -m bench.traces.decode
"""

from __future__ import annotations

import time

import orjson

from maestrale.config.telemetry import TelemetrySettings
from maestrale.telemetry.ingest import decode
from maestrale.telemetry.otlp.records import Owner
from tests.telemetry import otlp_data as otlp

ATTRIBUTES = {f"k{i}": "v" * 30 for i in range(15)} | {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "mistral-small",
    "gen_ai.usage.input_tokens": 10,
}


def main() -> None:
    settings, owner = TelemetrySettings(), Owner("org", "ws")
    for count in (10, 100, 1000, 10000):
        spans = [
            otlp.span(format(i + 1, "016x"), "chat", attributes=ATTRIBUTES) for i in range(count)
        ]
        data = otlp.traces(*spans)
        for name, body, media in (
            ("protobuf", data, "application/x-protobuf"),
            ("json", orjson.dumps(otlp.as_json(data)), "application/json"),
        ):
            start = time.perf_counter()
            _, decoded, _ = decode("traces", body, media, None, owner, settings)
            took = time.perf_counter() - start
            assert len(decoded.rows) == count
            print(
                f"{count:>6} spans {name:<8} {len(body):>10} bytes {took * 1000:>9.1f} ms"
                f" {took / count * 1e6:>7.0f} us/span"
            )


if __name__ == "__main__":
    main()
