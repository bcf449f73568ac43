"""The server's own spans: with tracing on, a request made with a workspace's key lands in that
workspace's telemetry store in process; an anonymous request's spans do not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import select

from maestrale.app import create_app
from maestrale.telemetry.tables import TelemetrySpan, TelemetryTrace
from maestrale.tracing import provider
from tests.support import app_fixtures
from tests.support.app_fixtures import default_tenant, make_client


@pytest.fixture
async def traced(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[FastAPI]:
    # Tracing on, its OTLP export kept in memory (no collector in tests).
    monkeypatch.setattr(provider, "OTLPSpanExporter", lambda endpoint: InMemorySpanExporter())
    settings = app_fixtures.test_settings(
        database_url, tmp_path / "data", otlp_endpoint="http://127.0.0.1:9"
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def test_a_keyed_request_lands_in_its_workspace(traced: FastAPI) -> None:
    async with make_client(traced) as client:
        assert (await client.get("/v1/models")).status_code == 200
    async with make_client(traced, None) as anonymous:
        assert (await anonymous.get("/v1/models")).status_code == 401
    await asyncio.sleep(0)  # the processor hands the trace over on the loop's next turn
    await traced.state.services.telemetry.drain()
    tenant = await default_tenant(traced.state.services.db)
    async with traced.state.services.db.transaction() as work:
        spans = (await work.session.execute(select(TelemetrySpan))).scalars().all()
        trace = (await work.session.execute(select(TelemetryTrace))).scalar_one()
    assert {s.workspace_id for s in spans} == {tenant.workspace_id}
    assert trace.root_span_name == "GET /v1/models" and trace.service_name == "maestrale"
    assert trace.span_count == len(spans) >= 2  # the request and its authentication at least
