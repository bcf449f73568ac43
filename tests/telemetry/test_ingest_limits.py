"""Hostile and faulty OTLP exports: unreadable bodies are refused whole (4xx, nothing stored), bad
records are rejected one by one (OTLP's partial success), limits hold, a full queue answers 429."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sqlalchemy import select

from maestrale.app import create_app
from maestrale.telemetry.tables import TelemetrySpan
from tests.support import app_fixtures
from tests.support.app_fixtures import make_client
from tests.telemetry import otlp_data as otlp

PROTOBUF = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}
GOOD = "1111111111111111"


@pytest.fixture
async def small(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    """An app with tiny telemetry limits."""
    settings = app_fixtures.test_settings(
        database_url,
        tmp_path / "data",
        telemetry_max_body_bytes=64 * 1024,
        telemetry_max_decompressed_bytes=256 * 1024,
        telemetry_max_attributes=3,
        telemetry_max_attribute_length=20,
        telemetry_max_attribute_depth=2,
        telemetry_queue_records=4,
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(small: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(small) as c:
        yield c


async def _spans(app: FastAPI, workspace: str | None = None) -> dict[str, TelemetrySpan]:
    await app.state.services.telemetry.drain()
    async with app.state.services.db.transaction() as work:
        stmt = select(TelemetrySpan)
        if workspace is not None:
            stmt = stmt.where(TelemetrySpan.workspace_id == workspace)
        found = await work.session.execute(stmt)
        return {s.span_id: s for s in found.scalars()}


def _error(resp: httpx.Response, status: int, code: str) -> None:
    assert resp.status_code == status, resp.text
    assert resp.json()["code"] == code, resp.text


async def test_unreadable_bodies_are_refused_whole(
    small: FastAPI, client: httpx.AsyncClient
) -> None:
    valid = otlp.traces(otlp.span(GOOD, "ok"))
    _error(
        await client.post("/v1/traces", content=b"\xff\x00garbage", headers=PROTOBUF),
        400,
        "invalid_protobuf",
    )
    _error(await client.post("/v1/traces", content=b"{not json", headers=JSON), 400, "invalid_json")
    _error(await client.post("/v1/traces", content=b"[]", headers=JSON), 400, "invalid_json")
    # An int attribute past 64 bits (OTLP/JSON writes ints as strings).
    doc = otlp.as_json(valid)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [
        {"key": "n", "value": {"intValue": str(2**64)}}
    ]
    _error(await client.post("/v1/traces", json=doc), 400, "invalid_json")
    # Nested past what JSON parsing takes (1,024 levels), then past protobuf's (100).
    for levels in (400, 60):
        deep = '{"arrayValue":{"values":[' * levels + '{"intValue":"1"}' + "]}}" * levels
        doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [
            {"key": "d", "value": "DEEP"}
        ]
        text = orjson.dumps(doc).decode().replace('"DEEP"', deep)
        resp = await client.post("/v1/traces", content=text, headers=JSON)
        _error(resp, 400, "invalid_json")
    _error(
        await client.post("/v1/traces", content=valid, headers={"Content-Type": "text/plain"}),
        415,
        "unsupported_media_type",
    )
    gz = {**PROTOBUF, "Content-Encoding": "gzip"}
    _error(
        await client.post("/v1/traces", content=b"\x1f\x8bnot gzip", headers=gz),
        400,
        "invalid_gzip",
    )
    bomb = gzip.compress(b"\x00" * (4 * 1024 * 1024))  # 4 MiB of zeros in ~4 KiB
    assert len(bomb) < 64 * 1024
    _error(await client.post("/v1/traces", content=bomb, headers=gz), 413, "payload_too_large")
    resp = await client.post("/v1/traces", content=b"\x00" * (65 * 1024), headers=PROTOBUF)
    assert resp.status_code == 413, resp.text
    async with make_client(small, None) as anonymous:
        resp = await anonymous.post("/v1/traces", content=valid, headers=PROTOBUF)
        assert resp.status_code == 401
    assert await _spans(small) == {}


async def test_bad_records_are_rejected_alone_and_limits_hold(
    small: FastAPI, client: httpx.AsyncClient
) -> None:
    wrong_length = otlp.span(GOOD, "short id")
    wrong_length.span_id = b"\x01\x02"
    zeros = otlp.span("2222222222222222", "zero trace", trace_id="0" * 32)
    future = otlp.span("3333333333333333", "from the future", start_ms=3 * 24 * 3600 * 1000)
    backwards = otlp.span("4444444444444444", "ends before it starts", duration_ms=-5)
    kept = otlp.span(
        "5555555555555555",
        "kept",
        attributes={
            "a": "x" * 100,
            "b": {"c": {"d": {"e": 1}}},
            "c": True,
            "d": 1.5,
            "e": b"\x00\x01",
        },
    )
    body = otlp.traces(wrong_length, zeros, future, backwards, kept)
    resp = await client.post("/v1/traces", content=body, headers=PROTOBUF)
    assert resp.status_code == 200, resp.text
    answer = ExportTraceServiceResponse()
    answer.ParseFromString(resp.content)
    assert answer.partial_success.rejected_spans == 3
    assert "span_id must be 8 bytes" in answer.partial_success.error_message

    # The same in OTLP/JSON: a trace id that is not hex is rejected, the answer is JSON.
    doc = otlp.as_json(otlp.traces(otlp.span("6666666666666666", "not hex")))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "zz" * 16
    resp = await client.post("/v1/traces", json=doc)
    assert resp.status_code == 200, resp.text
    assert resp.json()["partialSuccess"]["rejectedSpans"] == "1"

    spans = await _spans(small)
    assert set(spans) == {"4444444444444444", "5555555555555555"}
    assert spans["4444444444444444"].duration_ns == 0  # clamped
    attrs = spans["5555555555555555"].attributes
    # 3 kept, 2 dropped and counted; strings cut; deeper than 2 levels: null.
    assert attrs == {
        "a": "x" * 20,
        "b": {"c": {"d": None}},
        "c": True,
        "maestrale.dropped_attributes_count": 2,
    }


async def test_a_full_queue_answers_429_and_counts(
    small: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = small.state.services.telemetry
    release = asyncio.Event()
    write = queue._write

    async def slow(kind: str, rows: list[dict[str, Any]]) -> bool:  # a busy database
        await release.wait()
        return bool(await write(kind, rows))

    monkeypatch.setattr(queue, "_write", slow)
    two = otlp.traces(otlp.span("1111111111111111", "a"), otlp.span("2222222222222222", "b"))
    assert (await client.post("/v1/traces", content=two, headers=PROTOBUF)).status_code == 200
    # The workspace holds its half of the queue (4 records): its next batch waits...
    resp = await client.post("/v1/traces", content=two, headers=PROTOBUF)
    _error(resp, 429, "telemetry_queue_full")
    assert resp.headers["retry-after"] == "5"
    # ...while another workspace's still fits, until the queue is full.
    other = await app_fixtures.create_tenant(small.state.services.db)
    async with app_fixtures.make_client(small, other.key) as foreign:
        assert (await foreign.post("/v1/traces", content=two, headers=PROTOBUF)).status_code == 200
        _error(
            await foreign.post("/v1/traces", content=two, headers=PROTOBUF),
            429,
            "telemetry_queue_full",
        )
    metrics = (await client.get("/metrics")).text
    assert "maestrale_telemetry_rejected_batches_total 2.0" in metrics
    assert 'maestrale_telemetry_accepted_records_total{kind="spans"} 4.0' in metrics
    release.set()
    assert set(await _spans(small)) == {"1111111111111111", "2222222222222222"}
    assert len(await _spans(small, other.tenant.workspace_id)) == 2


async def test_metrics_are_counted_not_stored(client: httpx.AsyncClient) -> None:
    request = ExportMetricsServiceRequest()
    metric = request.resource_metrics.add().scope_metrics.add().metrics.add(name="jobs")
    metric.sum.data_points.add(as_int=3)
    metric.sum.data_points.add(as_int=4)
    resp = await client.post(
        "/telemetry/v1/metrics", content=request.SerializeToString(), headers=PROTOBUF
    )
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/x-protobuf"
    assert "maestrale_telemetry_metric_points_total 2.0" in (await client.get("/metrics")).text
