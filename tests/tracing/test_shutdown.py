"""Spans still waiting for their batch when the server is told to stop are exported before it
exits."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server
from tests.tracing.collector import Collector
from tests.tracing.conftest import new_trace, traceparent


def test_pending_spans_are_exported_at_shutdown(tmp_path: Path, collector: Collector) -> None:
    data = tmp_path / "data"
    data.mkdir()
    # Batches every 10 minutes: only the shutdown can send these spans within the test.
    env = {"MAESTRALE_OTLP_ENDPOINT": collector.url, "OTEL_BSP_SCHEDULE_DELAY": "600000"}
    proc, url = start_server(data, "--no-worker", env=env)
    trace_id, caller = new_trace()
    try:
        response = httpx.get(
            f"{url}/v1/models",
            headers={
                "Authorization": f"Bearer {API_KEY}",
                "traceparent": traceparent(trace_id, caller),
            },
            timeout=30,
        )
        assert response.status_code == 200
        assert collector.trace(trace_id) == []
    finally:
        stop_server(proc)
    spans = collector.trace(trace_id)
    assert {s.name for s in spans} >= {"GET /v1/models", "auth"}
