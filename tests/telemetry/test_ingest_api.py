"""The OTLP receiver end to end: protobuf, JSON and gzip exports land in the key's workspace with
their GenAI columns, the trace summary merged over batches, retries idempotent; logs; purge."""

from __future__ import annotations

import gzip
import json
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sqlalchemy import select

from maestrale.core.auth.principal import Tenant
from maestrale.telemetry.lifecycle import purge_old
from maestrale.telemetry.tables import TelemetryLog, TelemetrySpan, TelemetryTrace
from tests.support.app_fixtures import TenantKey, make_client
from tests.telemetry import otlp_data as otlp

pytestmark = pytest.mark.both_databases("maestrale.telemetry.repository")

PROTOBUF = {"Content-Type": "application/x-protobuf"}
ROOT, CHAT1, TOOL, CHAT2 = (
    "00f067aa0ba902b7",
    "1111111111111111",
    "2222222222222222",
    "3333333333333333",
)


def chat(span_id: str, start_ms: int, question: str, answer: str, tokens: int) -> Any:
    return otlp.span(
        span_id,
        "chat mistral-small",
        parent=ROOT,
        start_ms=start_ms,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "mistral_ai",
            "gen_ai.request.model": "mistral-small",
            "gen_ai.response.model": "mistral-small-2506",
            "gen_ai.conversation.id": "conv_1",
            "gen_ai.usage.input_tokens": tokens,
            "gen_ai.usage.output_tokens": "7",  # a sender's text still counts
            "gen_ai.input.messages": json.dumps(
                [
                    {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
                    {"role": "user", "parts": [{"type": "text", "content": question}]},
                ]
            ),
            "gen_ai.output.messages": [{"role": "assistant", "content": answer}],
        },
    )


async def _rows(app: FastAPI, table: Any, workspace: str) -> list[Any]:
    await app.state.services.telemetry.drain()
    async with app.state.services.db.transaction() as work:
        found = await work.session.execute(select(table).where(table.workspace_id == workspace))
        return list(found.scalars())


async def test_protobuf_json_gzip_exports_merge_into_one_trace(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant, other: TenantKey
) -> None:
    first = otlp.traces(
        otlp.span(ROOT, "POST /agent", start_ms=0, duration_ms=500),
        chat(CHAT1, 10, "hello?", "hi!", 11),
    )
    resp = await client.post("/v1/traces", content=first, headers=PROTOBUF)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/x-protobuf"
    parsed = ExportTraceServiceResponse()
    parsed.ParseFromString(resp.content)
    assert not parsed.HasField("partial_success")

    # The second batch as OTLP/JSON, gzipped, on the workflows worker's path.
    second = otlp.traces(
        otlp.span(
            TOOL,
            "execute_tool search",
            parent=CHAT1,
            start_ms=20,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "wf.workflow.execution_id": "ex-1",  # as the official workflows worker sends
                "wf.workflow.type": "triage",
            },
            error=True,
        ),
        chat(CHAT2, 30, "and then?", "done.", 5),
    )
    body = gzip.compress(orjson.dumps(otlp.as_json(second)))
    resp = await client.post(
        "/telemetry/v1/traces",
        content=body,
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/json" and resp.json() == {}

    # A retried export writes nothing twice; another workspace's same ids stay its own.
    assert (await client.post("/v1/traces", content=first, headers=PROTOBUF)).status_code == 200
    async with make_client(app, other.key) as foreign:
        resp = await foreign.post("/v1/traces", content=first, headers=PROTOBUF)
        assert resp.status_code == 200

    spans = {s.span_id: s for s in await _rows(app, TelemetrySpan, tenant.workspace_id)}
    assert set(spans) == {ROOT, CHAT1, TOOL, CHAT2}
    llm = spans[CHAT1]
    assert (llm.operation_name, llm.provider_name, llm.request_model, llm.response_model) == (
        "chat",
        "mistral_ai",
        "mistral-small",
        "mistral-small-2506",
    )
    assert (llm.usage_input_tokens, llm.usage_output_tokens, llm.conversation_id) == (
        11,
        7,
        "conv_1",
    )
    assert (llm.service_name, llm.scope_name, llm.kind) == ("shop", "tests", "SPAN_KIND_CLIENT")
    assert llm.duration_ns == 10 * otlp.MS and llm.trace_id == otlp.TRACE
    assert spans[TOOL].status_code == "Error" and spans[TOOL].tool_name == "search"
    assert (spans[TOOL].execution_id, spans[TOOL].workflow_name) == ("ex-1", "triage")

    [trace] = await _rows(app, TelemetryTrace, tenant.workspace_id)
    assert (trace.span_count, trace.llm_call_count, trace.tool_call_count) == (4, 2, 1)
    assert (trace.gen_ai_span_count, trace.error_count, trace.status_code) == (3, 1, "Error")
    assert (trace.root_span_id, trace.root_span_name) == (ROOT, "POST /agent")
    assert (trace.service_name, trace.environment, trace.conversation_id) == (
        "shop",
        "prod",
        "conv_1",
    )
    assert (trace.input_tokens, trace.output_tokens) == (16, 14)
    assert trace.models_used == ["mistral-small-2506"] and trace.tools_used == ["search"]
    assert trace.duration_ns == 500 * otlp.MS
    assert trace.first_turn_last_input_message == "hello?"
    assert trace.first_turn_last_output_message == "hi!"
    assert trace.last_turn_last_input_message == "and then?"
    assert trace.last_turn_last_output_message == "done."

    [foreign_trace] = await _rows(app, TelemetryTrace, other.tenant.workspace_id)
    assert foreign_trace.span_count == 2 and foreign_trace.organization_id != trace.organization_id

    # Logs, protobuf then JSON: a structured body is stored as its JSON.
    data = otlp.logs("started", {"step": 1})
    assert (await client.post("/v1/logs", content=data, headers=PROTOBUF)).status_code == 200
    worker = {"workflowExecutionID": "ex-1", "deploymentName": "support"}
    document = otlp.as_json(otlp.logs("json log", **worker), ExportLogsServiceRequest)
    assert (await client.post("/telemetry/v1/logs", json=document)).status_code == 200
    stored = await _rows(app, TelemetryLog, tenant.workspace_id)
    assert {log.body for log in stored} == {'{"step":1}', "json log", "started"}
    assert {(log.trace_id, log.span_id, log.service_name) for log in stored} == {
        (otlp.TRACE, ROOT, "shop")
    }
    assert {(log.execution_id, log.deployment_name) for log in stored} == {
        ("", ""),
        ("ex-1", "support"),
    }

    # Retention: nothing is younger than 30 days a year from now.
    future = otlp.NOW + 365 * 24 * 3600 * 10**9
    assert await purge_old(app.state.services.db, 30, now_ns=future) >= 5
    assert await _rows(app, TelemetrySpan, tenant.workspace_id) == []
    assert await _rows(app, TelemetryTrace, tenant.workspace_id) == []
    assert await _rows(app, TelemetryLog, tenant.workspace_id) == []
