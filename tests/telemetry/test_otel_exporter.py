"""Wire compatibility: the OpenTelemetry SDK's own OTLP/HTTP exporter (protobuf, gzip) exports a
GenAI span to the server, which stores it in the key's workspace."""

from __future__ import annotations

import asyncio

from fastapi import FastAPI
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import select

from maestrale.core.auth.principal import Tenant
from maestrale.telemetry.tables import TelemetrySpan, TelemetryTrace
from tests.support.app_fixtures import API_KEY
from tests.support.live import on_socket


async def test_the_sdk_exporter_lands_in_the_workspace(app: FastAPI, tenant: Tenant) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "sdk-app"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests")
    with (
        tracer.start_as_current_span("invoke_agent helper"),
        tracer.start_as_current_span("chat mistral-small") as span,
    ):
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.request.model", "mistral-small")
        span.set_attribute("gen_ai.usage.input_tokens", 12)
    spans = memory.get_finished_spans()
    async with on_socket(app) as port:
        exporter = OTLPSpanExporter(
            endpoint=f"http://127.0.0.1:{port}/v1/traces",
            headers={"Authorization": f"Bearer {API_KEY}"},
            compression=Compression.Gzip,
        )
        result = await asyncio.to_thread(exporter.export, spans)
        exporter.shutdown()
    assert result is SpanExportResult.SUCCESS
    await app.state.services.telemetry.drain()
    async with app.state.services.db.transaction() as work:
        stored = (await work.session.execute(select(TelemetrySpan))).scalars().all()
        trace = (await work.session.execute(select(TelemetryTrace))).scalar_one()
    assert {s.workspace_id for s in stored} == {tenant.workspace_id}
    assert {s.name: s.request_model for s in stored} == {
        "invoke_agent helper": "",
        "chat mistral-small": "mistral-small",
    }
    assert (trace.trace_id, trace.root_span_name) == (
        format(spans[0].context.trace_id, "032x"),
        "invoke_agent helper",
    )
    assert (trace.llm_call_count, trace.input_tokens, trace.service_name) == (1, 12, "sdk-app")
