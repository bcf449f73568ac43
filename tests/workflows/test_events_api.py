"""Workflow events: what workers report (single, batch, retried), the list and its cursor, the
index rows closing events close, tenancy, hostile input, and the official SDK reading them."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from mistralai.client import Mistral

from tests.support.app_fixtures import API_KEY, create_tenant, make_client
from tests.workflows.events_support import LIFECYCLE, event, post_batch, started_execution

pytestmark = pytest.mark.both_databases("maestrale.workflows.events.repository")


async def test_ingest_single_and_batch_then_list(wf_client: httpx.AsyncClient) -> None:
    exec_id = f"ex-{uuid.uuid4().hex}"
    first = event(exec_id, "WORKFLOW_EXECUTION_STARTED")
    response = await wf_client.post("/v1/workflows/events", json={"event": first})
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "success"
    rest = [event(exec_id, kind) for kind in LIFECYCLE[1:3]]
    # A retried batch holds events already received: they are stored once.
    response = await post_batch(wf_client, [first, *rest, rest[0]])
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "success", "message": None, "events_received": 4}
    again = await wf_client.post("/v1/workflows/events", json={"event": first})
    assert again.status_code == 200
    listed = await wf_client.get("/v1/workflows/events/list", params={"workflow_exec_id": exec_id})
    assert listed.status_code == 200, listed.text
    body = listed.json()
    assert body["next_cursor"] is None
    assert [e["event_id"] for e in body["events"]] == [e["event_id"] for e in (first, *rest)]
    stored = body["events"][0]
    assert {key: stored[key] for key in first} == first
    assert stored["schedule_id"] is None  # the optional envelope keys are all there


async def test_list_pages_with_an_opaque_cursor(wf_client: httpx.AsyncClient) -> None:
    exec_id = f"ex-{uuid.uuid4().hex}"
    sent = [event(exec_id, "ACTIVITY_TASK_STARTED") for _ in range(5)]
    assert (await post_batch(wf_client, sent)).status_code == 200
    seen: list[str] = []
    cursor = None
    for _ in range(5):
        params: dict[str, Any] = {"workflow_exec_id": exec_id, "limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = (await wf_client.get("/v1/workflows/events/list", params=params)).json()
        seen += [e["event_id"] for e in page["events"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [e["event_id"] for e in sent]
    for bad in ("garbage!", "e30", "eyJzZXEiOiAieCJ9", "W10"):
        response = await wf_client.get("/v1/workflows/events/list", params={"cursor": bad})
        assert response.status_code == 400, (bad, response.text)
        assert set(response.json()) >= {"detail", "code"}
    by_run = await wf_client.get(
        "/v1/workflows/events/list", params={"workflow_run_id": "no-such-run"}
    )
    assert by_run.json() == {"events": [], "next_cursor": None}


async def test_a_closing_event_closes_the_index_row(wf_client: httpx.AsyncClient) -> None:
    exec_id = await started_execution(wf_client)
    row = (await wf_client.get(f"/v1/workflows/executions/{exec_id}")).json()
    assert row["status"] == "RUNNING"
    failed = event(exec_id, "WORKFLOW_EXECUTION_FAILED", run_id=row["run_id"])
    assert (await wf_client.post("/v1/workflows/events", json={"event": failed})).status_code == 200
    after = (await wf_client.get(f"/v1/workflows/executions/{exec_id}")).json()
    assert after["status"] == "FAILED" and after["end_time"] is not None


async def test_hostile_input_is_a_4xx(wf_client: httpx.AsyncClient) -> None:
    exec_id = f"ex-{uuid.uuid4().hex}"
    for value in (2**63, 2**64, -1, "soon", 1.5):
        bad = event(exec_id, "ACTIVITY_TASK_STARTED", event_timestamp=value)
        response = await wf_client.post("/v1/workflows/events", json={"event": bad})
        assert 400 <= response.status_code < 500, (value, response.text)
    changes = ({"event_type": "NOPE"}, {"attributes": "x"}, {"event_id": ""}, {"event_id": None})
    for change in changes:
        bad = {**event(exec_id, "ACTIVITY_TASK_STARTED"), **change}
        response = await wf_client.post("/v1/workflows/events", json={"event": bad})
        assert response.status_code == 422, (change, response.text)
    # NUL in text: Postgres refuses to store it, and that is the client's error, not a 500.
    nuls: list[dict[str, Any]] = [{"event_id": "a\x00b"}, {"attributes": {"task_id": "\x00"}}]
    for change in nuls:
        nul = {**event(f"{exec_id}-nul", "ACTIVITY_TASK_STARTED"), **change}
        response = await wf_client.post("/v1/workflows/events", json={"event": nul})
        assert response.status_code < 500, (change, response.text)
    many = [event(exec_id, "ACTIVITY_TASK_STARTED") for _ in range(10_000)]
    response = await post_batch(wf_client, many)
    assert 400 <= response.status_code < 500
    assert (await post_batch(wf_client, [])).json()["events_received"] == 0
    listed = await wf_client.get("/v1/workflows/events/list", params={"workflow_exec_id": exec_id})
    assert listed.json()["events"] == []
    for header in ("abc", "-1", "99999999999999999999"):
        response = await wf_client.get(
            "/v1/workflows/events/stream", headers={"last-event-id": header}
        )
        assert response.status_code == 400, (header, response.text)


async def test_another_workspace_sees_and_touches_nothing(
    wf_app: FastAPI, wf_client: httpx.AsyncClient
) -> None:
    exec_id = await started_execution(wf_client)
    mine = [event(exec_id, kind) for kind in LIFECYCLE[:2]]
    assert (await post_batch(wf_client, mine)).status_code == 200
    other = await create_tenant(wf_app.state.services.db, f"other-{uuid.uuid4().hex[:6]}")
    async with make_client(wf_app, other.key) as stranger:
        forged = event(exec_id, "WORKFLOW_EXECUTION_FAILED")
        response = await stranger.post("/v1/workflows/events", json={"event": forged})
        assert response.status_code == 403, response.text
        assert (await post_batch(stranger, [forged])).status_code == 403
        for params in ({"workflow_exec_id": exec_id}, {"root_workflow_exec_id": exec_id}, {}):
            listed = await stranger.get("/v1/workflows/events/list", params=params)
            assert exec_id not in listed.text
        stream = await stranger.get(f"/v1/workflows/executions/{exec_id}/stream")
        assert stream.status_code == 404 and stream.json()["code"] == "WF_1100"
    still = await wf_client.get(f"/v1/workflows/executions/{exec_id}")
    assert still.json()["status"] == "RUNNING"


async def test_official_sdk_reads_list_and_execution_stream(
    wf_app: FastAPI, wf_client: httpx.AsyncClient
) -> None:
    exec_id = await started_execution(wf_client)
    sent = [event(exec_id, kind) for kind in LIFECYCLE]
    assert (await post_batch(wf_client, sent)).status_code == 200
    transport = httpx.AsyncClient(transport=httpx.ASGITransport(app=wf_app), base_url="http://test")
    async with transport:
        sdk = Mistral(api_key=API_KEY, server_url="http://test", async_client=transport)
        events = sdk.workflows.events
        page = await events.get_workflow_events_async(workflow_exec_id=exec_id, limit=3)
        kinds = [type(e).__name__ for e in page.events]
        assert kinds == [
            "WorkflowExecutionStartedResponse",
            "ActivityTaskStartedResponse",
            "ActivityTaskCompletedResponse",
        ]
        rest = await events.get_workflow_events_async(
            workflow_exec_id=exec_id, cursor=page.next_cursor
        )
        assert [e.event_id for e in rest.events] == [sent[3]["event_id"]]
        assert rest.next_cursor is None
        stream = await sdk.workflows.executions.stream_async(execution_id=exec_id)
        items = [item async for item in stream]
        assert [i.data.data.event_id for i in items] == [e["event_id"] for e in sent]
        assert items[0].data.workflow_context.workflow_exec_id == exec_id
