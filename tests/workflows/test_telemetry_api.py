"""Execution and deployment logs and execution traces, read from telemetry rows stored as the
official worker's exports land: pages and filters, the workspace's alone, the trace rebuilt as
OTLP JSON, its span tree and events, and the log stream following new records."""

from __future__ import annotations

import asyncio
import base64
import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import httpx
import pytest
from fastapi import FastAPI
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from sqlalchemy import update

from maestrale.core.auth.principal import Tenant
from maestrale.core.uow import unit_of_work
from maestrale.workflows.executions.tables import Execution
from maestrale.workflows.registry.tables import Deployment
from maestrale.workflows.telemetry import streaming
from maestrale.workflows.telemetry.repository import LogScope
from tests.support.app_fixtures import API_KEY, TenantKey, make_client
from tests.workflows.events_support import served, sse
from tests.workflows.telemetry_support import (
    STARTED,
    execution,
    log,
    new_id,
    progress,
    span,
    store,
)

pytestmark = pytest.mark.both_databases("maestrale.workflows.telemetry.repository")

EX = "/v1/workflows/executions"


@pytest.fixture(autouse=True)
def quick_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "POLL_SECONDS", 0.02)
    monkeypatch.setattr(streaming, "SETTLE_SECONDS", 0.05)


def bodies(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [record["body"] for record in response.json()["results"]]


def otlp_request(batches: list[dict[str, Any]]) -> ExportTraceServiceRequest:
    """OTLP/JSON as json_format reads it: the hex ids (OTLP's exception to the protobuf JSON
    mapping) as the base64 of their bytes."""
    for batch in batches:
        for scope in batch["scopeSpans"]:
            for item in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in item:
                        item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
    return ParseDict({"resourceSpans": batches}, ExportTraceServiceRequest())


async def test_logs_page_filter_and_stay_in_their_workspace(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant, other: TenantKey
) -> None:
    ex = new_id()
    deployment = Deployment(
        id=str(uuid.uuid4()),
        organization_id=tenant.organization_id,
        workspace_id=tenant.workspace_id,
        name="dep",
    )
    await store(
        app.state.services.db,
        execution(tenant, ex),
        deployment,
        log(tenant, ex, 10, "first"),
        log(tenant, ex, 20, "second", temporalActivityID="act-1", attempt=2),
        log(tenant, ex, 30, "third", workflowRunID="run-2", workerName="w2"),
        log(tenant, new_id(), 15, "another execution's"),
        log(other.tenant, ex, 25, "another workspace's"),
    )
    url = f"{EX}/{ex}/logs"
    first = await client.get(url, params={"limit": 2})
    assert bodies(first) == ["first", "second"]
    record = first.json()["results"][1]
    assert record["log_attributes"]["attempt"] == "2"  # every attribute as text
    assert record["trace_id"] == "ab" * 16 and record["severity_text"] == "INFO"
    rest = await client.get(url, params={"cursor": first.json()["next_cursor"], "limit": 2})
    assert bodies(rest) == ["third"] and rest.json()["next_cursor"] is None
    assert bodies(await client.get(url, params={"order": "desc"})) == ["third", "second", "first"]
    assert bodies(await client.get(url, params={"run_id": "run-2"})) == ["third"]
    assert bodies(await client.get(url, params={"activity_id": "act-1"})) == ["second"]
    window = {"after": (STARTED + timedelta(milliseconds=15)).isoformat(), "order": "desc"}
    page = await client.get(url, params={**window, "limit": 1})
    assert bodies(page) == ["third"]
    more = await client.get(url, params={"cursor": page.json()["next_cursor"]})
    assert bodies(more) == ["second"]  # the cursor kept the window and the order

    deployment_url = "/v1/workflows/deployments/dep/logs"
    assert len(bodies(await client.get(deployment_url))) == 4
    assert bodies(await client.get(deployment_url, params={"worker_name": "w2"})) == ["third"]
    build = await client.get(deployment_url, params={"log_type": "build"})
    assert build.status_code == 404 and build.json()["code"] == "WF_1100"

    async with make_client(app, other.key) as foreign:
        refused = await foreign.get(url)
        assert refused.status_code == 404 and refused.json()["code"] == "WF_1100"
        assert (await foreign.get(deployment_url)).status_code == 404
    for params in ({"cursor": "nope"}, {"cursor": "eyJvIjoiYXNjIiwidCI6MSwiaSI6MWU5OX0"}):
        bad = await client.get(url, params=params)
        assert bad.status_code == 400 and bad.json()["code"] == "WF_1000", bad.text
    assert (await client.get(url, params={"limit": 0})).status_code == 422
    far = await client.get(url, params={"after": "9999-12-31T23:59:59Z"})
    assert bodies(far) == []
    assert (await client.get(f"{EX}/{new_id()}/logs")).status_code == 404


async def test_trace_as_otlp_tree_and_events(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant, other: TenantKey
) -> None:
    ex, quiet = new_id(), new_id()
    events = [
        progress("fetch", "RUNNING", 110),
        progress("fetch", "COMPLETED", 150, **{"wf.progress.end_time_unix_ms": 1}),
        {"time_ns": 1, "name": "debug", "attributes": {"wf.type": "EVENT", "wf.internal": True}},
        {"time_ns": 2, "name": "exception", "attributes": {"exception.type": "ValueError"}},
    ]
    await store(
        app.state.services.db,
        execution(tenant, ex, status="COMPLETED"),
        execution(tenant, quiet),
        span(tenant, ex, "0000000000000001", "", "StartWorkflow:echo", 0),
        span(
            tenant,
            ex,
            "0000000000000002",
            "0000000000000001",
            "RunWorkflow:echo",
            100,
            events=events,
            attributes={"wf.workflow.type": "echo", "custom": {"k": [1]}},
        ),
        span(
            tenant,
            ex,
            "0000000000000003",
            "0000000000000002",
            "FailActivity:say",
            120,
            attributes={"wf.activity.execution_id": "1"},
        ),
        # The worker's HTTP client span: in the trace without the execution's attribute.
        span(tenant, "", "0000000000000004", "0000000000000003", "POST", 130),
        span(
            other.tenant, ex, "0000000000000001", "", "StartWorkflow:echo", -10, trace_id="ef" * 16
        ),
    )
    info = (await client.get(f"{EX}/{ex}/trace/info")).json()
    assert info == {"otel_trace_id": "ab" * 16, "has_trace_data": True}

    otel = (await client.get(f"{EX}/{ex}/trace/otel")).json()
    assert otel["status"] == "COMPLETED" and otel["result"] == {"ok": True}
    assert otel["data_source"] and otel["otel_trace_id"] == "ab" * 16
    request = otlp_request(otel["otel_trace_data"]["batches"])
    (resource,) = request.resource_spans
    assert {(a.key, a.value.int_value) for a in resource.resource.attributes} >= {
        ("worker_id", 4242)
    }
    spans = resource.scope_spans[0].spans
    assert [s.span_id.hex() for s in spans] == [f"{i:016x}" for i in (1, 2, 3, 4)]
    assert spans[1].parent_span_id == spans[0].span_id and spans[0].trace_id.hex() == "ab" * 16
    assert spans[2].status.code == 2 and spans[1].start_time_unix_nano > 10**18
    assert spans[1].events[0].name == "fetch"

    tree = (await client.get(f"{EX}/{ex}/trace/summary")).json()["span_tree"]

    def names(node: dict[str, Any]) -> list[Any]:
        return [node["name"], [names(child) for child in node["children"]]]

    assert names(tree) == [
        "StartWorkflow:echo",
        [["RunWorkflow:echo", [["FailActivity:say", [["POST", []]]]]]],
    ]
    run = tree["children"][0]
    assert run["attributes"]["custom"] == '{"k":[1]}'
    assert [e["name"] for e in run["events"]] == ["fetch", "fetch", "debug"]  # as recorded

    async def trace_events(**params: Any) -> list[dict[str, Any]]:
        response = await client.get(f"{EX}/{ex}/trace/events", params=params)
        assert response.status_code == 200, response.text
        found: list[dict[str, Any]] = response.json()["events"]
        return found

    plain = await trace_events()
    assert [(e["type"], e["status"]) for e in plain] == [
        ("EVENT_PROGRESS", "RUNNING"),
        ("EVENT_PROGRESS", "COMPLETED"),
    ]
    (merged,) = await trace_events(merge_same_id_events=True)
    assert merged["status"] == "COMPLETED" and merged["end_time_unix_ms"] == 1
    assert merged["start_time_unix_ms"] == plain[0]["start_time_unix_ms"]
    internal = await trace_events(include_internal_events=True)
    assert [e["name"] for e in internal] == ["debug", "fetch", "fetch"]

    # An execution no telemetry came for yet: empty answers, not 404s.
    assert (await client.get(f"{EX}/{quiet}/trace/info")).json()["has_trace_data"] is False
    empty = (await client.get(f"{EX}/{quiet}/trace/otel")).json()
    assert empty["otel_trace_data"] is None and empty["status"] == "RUNNING"
    assert (await client.get(f"{EX}/{quiet}/trace/summary")).json()["span_tree"] is None
    assert (await client.get(f"{EX}/{quiet}/trace/events")).json()["events"] == []
    assert bodies(await client.get(f"{EX}/{quiet}/logs")) == []
    async with make_client(app, other.key) as foreign:
        assert (await foreign.get(f"{EX}/{ex}/trace/otel")).status_code == 404


async def test_log_stream_follows_new_records_until_the_execution_ends(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    db = app.state.services.db
    ex = new_id()
    await store(db, execution(tenant, ex), log(tenant, ex, 10, "stored"))
    async with served(app) as url:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as live:
            text, posted = "", False
            async with live.stream("GET", f"{EX}/{ex}/logs/stream") as stream:
                assert stream.status_code == 200
                async for chunk in stream.aiter_text():
                    text += chunk
                    if not posted:
                        # The stream is open: a record arrives, then the execution ends.
                        posted = True
                        async with unit_of_work(db.sessionmaker) as work:
                            work.session.add(log(tenant, ex, 5, "late"))
                            await work.session.execute(
                                update(Execution)
                                .where(Execution.id == ex)
                                .values(status="COMPLETED", end_time=STARTED)
                            )
            messages = sse(text)
            assert [m["data"]["body"] for m in messages] == ["stored", "late"]
            assert {m["event"] for m in messages} == {"log"}
            resumed = await asyncio.wait_for(
                live.get(f"{EX}/{ex}/logs/stream", headers={"Last-Event-ID": messages[0]["id"]}),
                10,
            )
            assert [m["data"]["body"] for m in sse(resumed.text)] == ["late"]
    bad = await client.get(f"{EX}/{ex}/logs/stream", params={"last_event_id": "x"})
    assert bad.status_code == 400


class ClosedInTemporal:
    """Temporal's word on an execution the index still says runs: it closed a minute ago."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def describe(self, execution_id: str) -> Any:
        self.asked.append(execution_id)
        closed = datetime.now(UTC) - timedelta(minutes=1)
        return SimpleNamespace(status="COMPLETED", close_time=closed)


async def test_log_stream_ends_when_temporal_says_closed(app: FastAPI, tenant: Tenant) -> None:
    db = app.state.services.db
    ex = new_id()
    await store(db, execution(tenant, ex), log(tenant, ex, 10, "only"))
    scope = LogScope("execution_id", ex, match=(), since_ns=0)
    engine = ClosedInTemporal()
    spec = streaming.LogStreamSpec(tenant=tenant, scope=scope, watch=ex)
    stream = streaming.LogStream(spec, db.sessionmaker, cast(Any, engine))
    frames = [frame async for frame in stream.frames()]
    assert [m["data"]["body"] for m in sse(b"".join(frames).decode())] == ["only"]
    assert engine.asked == [ex]
