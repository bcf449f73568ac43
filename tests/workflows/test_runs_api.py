"""Runs: the listing (filters, order, pages and their tokens, running rows refreshed from
Temporal), one run by id (the latest or an earlier one) and its history."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from temporalio.client import Client

from tests.support.app_fixtures import create_tenant, make_client
from tests.workflows.plain_worker import definitions, running_worker
from tests.workflows.test_execution_control_api import (
    EXECUTIONS,
    queue_name,
    start,
    wait_status,
)

pytestmark = pytest.mark.both_databases("maestrale.workflows.runs.repository")

RUNS = "/v1/workflows/runs"


async def register_with_internal(client: httpx.AsyncClient, deployment: str) -> None:
    """The plain worker's workflows and a technical one (never run by any worker)."""
    internal = {
        "name": "internal-helper",
        "task_queue": deployment,
        "input_schema": {"type": "object"},
        "is_technical": True,
    }
    response = await client.post(
        "/v1/workflows/register",
        json={
            "definitions": [*definitions(deployment), internal],
            "deployment_name": deployment,
            "worker_name": "w1",
        },
    )
    assert response.status_code == 200, response.text


async def listed(client: httpx.AsyncClient, **params: Any) -> list[str]:
    response = await client.get(RUNS, params=params)
    assert response.status_code == 200, response.text
    return [e["execution_id"] for e in response.json()["executions"]]


async def all_pages(client: httpx.AsyncClient, **params: Any) -> list[str]:
    return [item["execution_id"] for item in await all_items(client, **params)]


async def all_items(client: httpx.AsyncClient, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    token = None
    while True:
        query = {**params, **({"next_page_token": token} if token else {})}
        response = await client.get(RUNS, params=query)
        assert response.status_code == 200, response.text
        body = response.json()
        assert len(body["executions"]) <= params.get("page_size", 50)
        items += body["executions"]
        token = body.get("next_page_token")
        if not token:
            return items


async def test_list_filters(
    wf_client: httpx.AsyncClient, temporal_address: str, namespace: str
) -> None:
    queue = queue_name()
    await register_with_internal(wf_client, queue)
    before = datetime.now(UTC) - timedelta(seconds=1)
    async with running_worker(temporal_address, namespace, queue):
        done = await start(
            wf_client,
            "echo",
            {"x": 1},
            wait_for_result=True,
            timeout_seconds=20,
            execution_id="done-" + queue,
        )
        counter = await start(wf_client, "counter", {}, execution_id="count-" + queue)
        doomed = await start(wf_client, "echo", {"sleep": 60})
        assert (await wf_client.post(f"{EXECUTIONS}/{doomed}/terminate")).status_code == 204
        internal = await start(wf_client, "internal-helper", {})
    everything = {done, counter, doomed, internal}
    assert set(await listed(wf_client)) == everything

    listed_body = (await wf_client.get(RUNS)).json()
    item = next(e for e in listed_body["executions"] if e["execution_id"] == done)
    assert item["status"] == "COMPLETED" and "result" not in item
    assert item["workflow_name"] == "echo" and item["deployment_name"] == queue
    assert item["root_execution_id"] == done and item["run_id"]
    assert item["total_duration_ms"] is not None and item["end_time"] is not None

    echo_id = item["workflow_id"]
    assert set(await listed(wf_client, workflow_identifier="echo")) == {done, doomed}
    assert set(await listed(wf_client, workflow_identifier=echo_id)) == {done, doomed}
    assert await listed(wf_client, workflow_identifier="nope") == []
    assert await listed(wf_client, status="COMPLETED") == [done]
    assert set(await listed(wf_client, status=["COMPLETED", "TERMINATED"])) == {done, doomed}
    assert set(await listed(wf_client, status="RUNNING")) == {counter, internal}
    assert await listed(wf_client, status="RETRYING_AFTER_ERROR") == []
    bad = await wf_client.get(RUNS, params={"status": "SLEEPING"})
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"][:2] == ["query", "status"]
    assert set(await listed(wf_client, deployment_name=queue)) == everything
    assert await listed(wf_client, deployment_name="elsewhere") == []
    assert await listed(wf_client, root_execution_id=counter) == [counter]
    assert await listed(wf_client, search="count-") == [counter]
    assert set(await listed(wf_client, search="ECH")) == {done, doomed}  # the name, any case
    assert set(await listed(wf_client, search="Echo")) == {done, doomed}  # the display name
    assert await listed(wf_client, search="%") == []  # a wildcard is a character
    assert set(await listed(wf_client, include_internal="false")) == everything - {internal}
    assert set(await listed(wf_client, start_time_after=before.isoformat())) == everything
    assert await listed(wf_client, start_time_before=before.isoformat()) == []
    # An end-time bound leaves out what is still running.
    assert set(await listed(wf_client, end_time_after=before.isoformat())) == {done, doomed}
    later = (datetime.now(UTC) + timedelta(hours=1)).replace(tzinfo=None).isoformat()
    assert await listed(wf_client, end_time_after=later) == []  # naive: UTC
    assert set(await listed(wf_client, user_id="current")) == everything
    assert await listed(wf_client, user_id=str(uuid.uuid4())) == []

    tagged = await wf_client.put(f"/v1/workflows/{echo_id}", json={"tags": ["a", "b"]})
    assert tagged.status_code == 200, tagged.text
    assert set(await listed(wf_client, workflow_tags=["a"])) == {done, doomed}
    assert set(await listed(wf_client, workflow_tags=["a", "b"])) == {done, doomed}
    assert await listed(wf_client, workflow_tags=["a", "c"]) == []

    response = await wf_client.get(RUNS, params={"search_key": "k:v"})
    assert response.status_code == 400 and "search_key" in response.json()["detail"]
    for size in (0, 1001, 2**70):
        response = await wf_client.get(RUNS, params={"page_size": size})
        assert response.status_code == 422, (size, response.text)


async def test_pages_in_order_and_tokens_are_checked(
    wf_app: FastAPI, wf_client: httpx.AsyncClient, temporal_address: str, namespace: str
) -> None:
    queue = queue_name()
    await register_with_internal(wf_client, queue)
    ids = []
    async with running_worker(temporal_address, namespace, queue):
        for i in range(5):
            ids.append(
                await start(wf_client, "echo", {"i": i}, wait_for_result=True, timeout_seconds=20)
            )
    newest_first = await all_pages(wf_client, page_size=2)
    assert newest_first == ids[::-1]
    assert await all_pages(wf_client, page_size=2, order="asc") == ids
    assert await all_pages(wf_client, page_size=1000) == ids[::-1]
    # By end time: the ended ones in order, then those still running (no end time yet).
    running = await start(wf_client, "echo", {"sleep": 60})
    by_end = await all_items(wf_client, page_size=2, sort_by="end_time", order="asc")
    assert [e["execution_id"] for e in by_end][-1] == running
    ends = [datetime.fromisoformat(e["end_time"]) for e in by_end[:-1]]
    assert ends == sorted(ends) and len(ends) == 5
    by_end = await all_items(wf_client, page_size=2, sort_by="end_time")
    assert by_end[0]["execution_id"] == running
    assert [datetime.fromisoformat(e["end_time"]) for e in by_end[1:]] == ends[::-1]
    assert (await wf_client.post(f"{EXECUTIONS}/{running}/terminate")).status_code == 204

    first = (await wf_client.get(RUNS, params={"page_size": 2})).json()
    token = first["next_page_token"]
    assert token and len(first["executions"]) == 2
    for garbage in ("garbage", "e30", "!!!", token[:-3], "x" * 1025):
        response = await wf_client.get(RUNS, params={"page_size": 2, "next_page_token": garbage})
        assert response.status_code in (400, 422), (garbage, response.text)
        if response.status_code == 400:
            assert response.json()["code"] == "WF_1000"
    # A token of another listing (other filters, order) or of another workspace: 400.
    for params in ({"status": "COMPLETED"}, {"order": "asc"}, {"sort_by": "end_time"}):
        response = await wf_client.get(
            RUNS, params={"page_size": 2, "next_page_token": token, **params}
        )
        assert response.status_code == 400, (params, response.text)
    other = await create_tenant(wf_app.state.services.db)
    async with make_client(wf_app, other.key) as stranger:
        response = await stranger.get(RUNS, params={"page_size": 2, "next_page_token": token})
        assert response.status_code == 400, response.text
    # The page size may change between pages.
    rest = await wf_client.get(RUNS, params={"page_size": 10, "next_page_token": token})
    assert [e["execution_id"] for e in rest.json()["executions"]] == [*ids, running][::-1][2:]


async def test_running_rows_are_refreshed_from_temporal(
    wf_client: httpx.AsyncClient, temporal_address: str, namespace: str
) -> None:
    queue = queue_name()
    await register_with_internal(wf_client, queue)
    execution_id = await start(wf_client, "echo", {"sleep": 60})
    # Ended behind the API's back: the listing asks Temporal about what it thinks runs.
    client = await Client.connect(temporal_address, namespace=namespace)
    await client.get_workflow_handle(execution_id).terminate(reason="outside")
    body = (await wf_client.get(RUNS)).json()
    (item,) = body["executions"]
    assert item["status"] == "TERMINATED" and item["end_time"] is not None
    assert await listed(wf_client, status="TERMINATED") == [execution_id]


async def test_get_run_latest_and_earlier_and_its_history(
    wf_client: httpx.AsyncClient, temporal_address: str, namespace: str
) -> None:
    queue = queue_name()
    await register_with_internal(wf_client, queue)
    async with running_worker(temporal_address, namespace, queue):
        execution_id = await start(
            wf_client, "echo", {"y": 2}, wait_for_result=True, timeout_seconds=20
        )
        first = (await wf_client.get(f"{EXECUTIONS}/{execution_id}")).json()
        response = await wf_client.get(f"{RUNS}/{first['run_id']}")
        assert response.status_code == 200, response.text
        assert response.json() == first

        events = (await wf_client.get(f"{EXECUTIONS}/{execution_id}/history")).json()["events"]
        task_done = next(
            int(e["eventId"])
            for e in events
            if e["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_COMPLETED"
        )
        reset = await wf_client.post(
            f"{EXECUTIONS}/{execution_id}/reset", json={"event_id": task_done}
        )
        assert reset.status_code == 204, reset.text
        latest = await wait_status(wf_client, execution_id, "COMPLETED")
    assert latest["run_id"] != first["run_id"]

    # The earlier run: its own status, times and result, found through Temporal.
    earlier = (await wf_client.get(f"{RUNS}/{first['run_id']}")).json()
    assert earlier["execution_id"] == execution_id and earlier["run_id"] == first["run_id"]
    assert earlier["status"] == "COMPLETED" and earlier["result"] == {"result": {"y": 2}}
    assert earlier["end_time"] is not None
    # The reset run's history starts over and ends completed; the earlier run's ends where
    # the reset cut it.
    history = (await wf_client.get(f"{RUNS}/{latest['run_id']}/history")).json()["events"]
    assert history[-1]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"
    old = (await wf_client.get(f"{RUNS}/{first['run_id']}/history")).json()["events"]
    assert old[0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"] == [{"y": 2}]

    for missing in (str(uuid.uuid4()), "not-a-uuid", "r" * 300, first["run_id"].upper() + "0"):
        for path in (f"{RUNS}/{missing}", f"{RUNS}/{missing}/history"):
            response = await wf_client.get(path)
            assert response.status_code == 404, (path, response.text)
            assert response.json()["code"] == "WF_1100"
    # A run id in another form of the same UUID is the same run.
    same = await wf_client.get(f"{RUNS}/{first['run_id'].upper()}")
    assert same.status_code == 200 and same.json()["run_id"] == first["run_id"]
