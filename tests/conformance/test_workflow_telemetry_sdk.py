"""mistralai 3.x reads an execution's logs (a page, the stream), its trace (info, OTel, summary,
events) and a deployment's logs from a live server, off telemetry rows stored as the official
worker's exports land; every answer parses into the SDK's own models."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from maestrale.core.db import Database
from maestrale.workflows.registry.tables import Deployment
from tests.conformance.conftest import LiveServer
from tests.support.app_fixtures import default_tenant
from tests.support.sdks import NEWEST_3, SdkProcess
from tests.workflows.telemetry_support import execution, log, new_id, progress, span, store

W = "workflows."


@pytest.fixture(scope="module")
def sdk3(live_server: LiveServer) -> Iterator[SdkProcess]:
    sdk = SdkProcess(NEWEST_3, live_server.url, live_server.api_key)
    yield sdk
    sdk.close()


async def _seed(database_url: str, ex: str, deployment: str) -> None:
    database = Database(database_url)
    try:
        tenant = await default_tenant(database)
        await store(
            database,
            execution(tenant, ex, status="COMPLETED"),
            Deployment(
                id=str(uuid.uuid4()),
                organization_id=tenant.organization_id,
                workspace_id=tenant.workspace_id,
                name=deployment,
            ),
            log(tenant, ex, 10, "first", deploymentName=deployment),
            log(tenant, ex, 20, "second", deploymentName=deployment),
            span(tenant, ex, "0000000000000001", "", "StartWorkflow:echo", 0),
            span(
                tenant,
                ex,
                "0000000000000002",
                "0000000000000001",
                "RunWorkflow:echo",
                5,
                events=[progress("fetch", "RUNNING", 6), progress("fetch", "COMPLETED", 9)],
                attributes={"tags": ["a", "b"], "attempt": 1, "ratio": 0.5, "ok": True},
            ),
        )
    finally:
        await database.dispose()


def test_execution_logs_and_trace_through_mistralai_3(
    sdk3: SdkProcess, live_server: LiveServer
) -> None:
    ex, deployment = new_id(), f"tel-{uuid.uuid4().hex[:8]}"
    asyncio.run(_seed(live_server.database_url, ex, deployment))

    def ok(operation: str, **kwargs: Any) -> Any:
        return sdk3.call(W + operation, **kwargs).ok()

    page = ok("executions.get_workflow_execution_logs", execution_id=ex, limit=1)
    assert [r["body"] for r in page["results"]] == ["first"] and page["next_cursor"]
    rest = ok("executions.get_workflow_execution_logs", execution_id=ex, cursor=page["next_cursor"])
    assert [r["body"] for r in rest["results"]] == ["second"]
    # The execution has ended: the stream sends what is stored, then ends.
    streamed = ok("executions.stream_workflow_execution_logs", execution_id=ex)
    assert [(m["event"], m["data"]["body"]) for m in streamed] == [
        ("log", "first"),
        ("log", "second"),
    ]
    info = ok("executions.get_workflow_execution_trace_info", execution_id=ex)
    assert info == {"otel_trace_id": "ab" * 16, "has_trace_data": True}
    otel = ok("executions.get_workflow_execution_trace_otel", execution_id=ex)
    spans = otel["otel_trace_data"]["batches"][0]["scopeSpans"][0]["spans"]
    assert [s["spanId"] for s in spans] == ["0000000000000001", "0000000000000002"]
    values = {a["key"]: a["value"] for a in spans[1]["attributes"]}
    assert values["attempt"] == {"intValue": "1"} and values["ok"] == {"boolValue": True}
    summary = ok("executions.get_workflow_execution_trace_summary", execution_id=ex)
    assert summary["span_tree"]["children"][0]["name"] == "RunWorkflow:echo"
    events = ok(
        "executions.get_workflow_execution_trace_events", execution_id=ex, merge_same_id_events=True
    )
    assert [e["status"] for e in events["events"]] == ["COMPLETED"]
    logs = ok("deployments.get_deployment_logs", name=deployment, order="desc")
    assert [r["body"] for r in logs["results"]] == ["second", "first"]
