"""Dataset import from telemetry spans: references resolved in the caller's workspace only, the
mapping contract applied, GenAI messages converted to chat messages, unusable spans skipped
with their reason, and a request none of whose spans exists refused."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI
from sqlalchemy import insert

from maestrale.core.auth.principal import Tenant
from maestrale.observability.datasets.span_records import span_payload
from maestrale.telemetry.tables import TelemetrySpan
from tests.batch.support import run_jobs
from tests.observability.events_seed import obs_error
from tests.observability.test_dataset_imports_api import records, start_import, task_of
from tests.observability.test_datasets_api import new_dataset
from tests.support.app_fixtures import TenantKey, default_tenant

pytestmark = pytest.mark.both_databases("maestrale.observability.datasets.span_source")

DATASETS = "/v1/observability/datasets"
TRACE = "0af7651916cd43dd8448eb211c80319c"
INPUT = [
    {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
    {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"c": "P"}}],
    },
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "sunny"}]},
]
OUTPUT = [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}]
SYSTEM = [{"type": "text", "content": "Be brief."}]


def span_row(tenant: Tenant, span_id: str, attributes: dict[str, Any]) -> dict[str, Any]:
    return {
        "organization_id": tenant.organization_id,
        "workspace_id": tenant.workspace_id,
        "trace_id": TRACE,
        "span_id": span_id,
        "start_ns": 1_700_000_000_000_000_000,
        "end_ns": 1_700_000_001_000_000_000,
        "duration_ns": 1_000_000_000,
        "name": "chat mistral-small",
        "kind": "SPAN_KIND_CLIENT",
        "request_model": "mistral-small",
        "service_name": "shop",
        "attributes": attributes,
        "resource_attributes": {"service.name": "shop", "env": "prod"},
    }


def body(*span_ids: str, mappings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "span_references": [{"trace_id": TRACE.upper(), "span_id": s} for s in span_ids],
        "mapping_contract": {"version": 1, "mappings": mappings or []},
    }


def mapping(target: str, namespace: str, key: str) -> dict[str, Any]:
    return {"target_field": target, "source_field": {"namespace": namespace, "key": key}}


async def test_spans_become_records(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    db = app.state.services.db
    tenant = await default_tenant(db)
    genai = {
        "gen_ai.input.messages": orjson.dumps(INPUT).decode(),  # as JSON text
        "gen_ai.output.messages": OUTPUT,  # as a structured attribute value
        "gen_ai.system_instructions": orjson.dumps(SYSTEM).decode(),
        "app.expected": '{"answer": "Sunny."}',
        "app.note": "[not json",
        "app.blank": "  ",
    }
    rows = [
        span_row(tenant, "00f067aa0ba902b7", genai),
        span_row(tenant, "00f067aa0ba902b8", {"http.route": "/health"}),  # no messages
        span_row(other.tenant, "00f067aa0ba902b9", genai),  # another workspace's
    ]
    async with db.transaction() as work:
        await work.session.execute(insert(TelemetrySpan), rows)
    ds = await new_dataset(client)
    url = f"{DATASETS}/{ds['id']}/imports/from-spans"

    # None of the spans is in the workspace: nothing could be imported.
    obs_error(await client.post(url, json=body("00f067aa0ba902b9")), 404, "SPAN_NOT_FOUND")
    doubled = [mapping("x", "span_attributes", "a"), mapping("x", "resource_attributes", "b")]
    obs_error(
        await client.post(url, json=body("00f067aa0ba902b7", mappings=doubled)),
        400,
        "VALIDATION_ERROR",
    )

    mappings = [
        mapping("expected", "span_attributes", "app.expected"),
        mapping("note", "span_attributes", "app.note"),
        mapping("blank", "span_attributes", "app.blank"),
        mapping("env", "resource_attributes", "env"),
    ]
    ids = ("00f067aa0ba902b7", "00f067aa0ba902b8", "00f067aa0ba902b9", "00f067aa0ba902b7")
    task = await start_import(client, ds["id"], "spans", **body(*ids, mappings=mappings))
    await run_jobs(app)
    done = await task_of(client, ds["id"], task["id"])
    assert done["status"] == "COMPLETED", done
    assert done["message"] == "imported 1 record; skipped 2 (1 no messages, 1 not found)"
    assert done["result"] == {
        "requested_record_count": 3,
        "imported_record_count": 1,
        "skipped_record_count": 2,
    }
    [record] = await records(client, ds["id"])
    assert record["source"] == "TELEMETRY_SPAN"
    assert record["properties"] == {
        "trace_id": TRACE,
        "span_id": "00f067aa0ba902b7",
        "span_name": "chat mistral-small",
        "model": "mistral-small",
        "service_name": "shop",
    }
    assert record["payload"] == {
        "expected": {"answer": "Sunny."},
        "note": "[not json",
        "env": "prod",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"c":"P"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."},
        ],
    }


def test_mapped_messages_and_legacy_attributes() -> None:
    # A mapping targeting `messages` is converted; it replaces the span's own conversation.
    payload, _ = span_payload(
        [mapping("messages", "span_attributes", "gen_ai.output.messages")],
        {"gen_ai.output.messages": orjson.dumps(OUTPUT).decode(), "gen_ai.input.messages": INPUT},
        {},
    )
    assert payload == {"messages": [{"role": "assistant", "content": "Sunny."}]}
    legacy = [{"role": "user", "content": "hi"}]
    payload, _ = span_payload([], {"gen_ai.prompt": orjson.dumps(legacy).decode()}, {})
    assert payload == {"messages": legacy}
    # Messages that are not a list of messages, or only a system prompt: skipped.
    bad = [mapping("messages", "span_attributes", "k")]
    assert span_payload(bad, {"k": "hello"}, {}) == (None, "no messages")
    assert span_payload([], {"gen_ai.system_instructions": SYSTEM}, {}) == (None, "no messages")
