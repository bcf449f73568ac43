"""Acting on executions on a real Temporal: cancel, terminate, reset, batches, signals, queries,
updates, history; their errors, their tenancy, and the official SDK's calls (strict on 204/202)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from mistralai.client import Mistral
from mistralai.client.models import WorkflowExecutionResponse

from tests.support.app_fixtures import API_KEY, create_tenant, make_client
from tests.workflows.plain_worker import register, running_worker

pytestmark = pytest.mark.both_databases("maestrale.workflows.executions.repository")

EXECUTIONS = "/v1/workflows/executions"


def queue_name() -> str:
    return f"dep-{uuid.uuid4().hex[:8]}"


async def start(client: httpx.AsyncClient, workflow: str, input_: Any = None, **extra: Any) -> str:
    response = await client.post(
        f"/v1/workflows/{workflow}/execute", json={"input": input_, **extra}
    )
    assert response.status_code == 200, response.text
    execution_id: str = response.json()["execution_id"]
    return execution_id


async def wait_status(
    client: httpx.AsyncClient, execution_id: str, status: str, timeout: float = 20
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        response = await client.get(f"{EXECUTIONS}/{execution_id}")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        if body["status"] == status or time.monotonic() > deadline:
            assert body["status"] == status, body
            return body
        await asyncio.sleep(0.1)


async def query_until(client: httpx.AsyncClient, execution_id: str, expected: Any) -> None:
    """Query `total` until it says `expected`: a query is answered from the workflow's last
    completed task, which a signal just sent may not have reached yet (and there is none
    before the first one)."""
    deadline = time.monotonic() + 20
    while True:
        response = await client.post(f"{EXECUTIONS}/{execution_id}/queries", json={"name": "total"})
        if response.status_code == 200 and response.json()["result"] == expected:
            return
        assert time.monotonic() < deadline, response.text
        await asyncio.sleep(0.1)


async def start_counter(client: httpx.AsyncClient, start_at: int = 0) -> str:
    """A running `counter` that has begun: its run sets the total from its input, so a signal
    delivered with its first task (before the run began) would be overwritten."""
    execution_id = await start(client, "counter", {"start": start_at})
    await query_until(client, execution_id, start_at)
    return execution_id


@pytest.fixture
async def deployment(
    wf_client: httpx.AsyncClient, temporal_address: str, namespace: str
) -> AsyncIterator[str]:
    """A deployment with the plain worker's workflows, its worker polling for the test."""
    queue = queue_name()
    await register(wf_client, queue)
    async with running_worker(temporal_address, namespace, queue):
        yield queue


async def test_cancel_ends_canceled_and_a_closed_one_is_a_409(
    wf_client: httpx.AsyncClient, deployment: str
) -> None:
    execution_id = await start(wf_client, "echo", {"sleep": 60})
    response = await wf_client.post(f"{EXECUTIONS}/{execution_id}/cancel")
    assert response.status_code == 204, response.text
    assert response.content == b""
    body = await wait_status(wf_client, execution_id, "CANCELED")
    assert body["end_time"] is not None and body["result"] is None
    again = await wf_client.post(f"{EXECUTIONS}/{execution_id}/cancel")
    assert again.status_code == 409, again.text
    assert again.json()["code"] == "WF_1102"


async def test_terminate_with_and_without_a_body(wf_client: httpx.AsyncClient) -> None:
    # No worker: terminating needs none, and the index shows TERMINATED at once.
    queue = queue_name()
    await register(wf_client, queue)
    first = await start(wf_client, "echo", {"sleep": 60})
    second = await start(wf_client, "echo", {"sleep": 60})
    response = await wf_client.post(f"{EXECUTIONS}/{first}/terminate", json={"reason": "enough"})
    assert response.status_code == 204, response.text
    response = await wf_client.post(f"{EXECUTIONS}/{second}/terminate")
    assert response.status_code == 204, response.text
    for execution_id in (first, second):
        body = (await wf_client.get(f"{EXECUTIONS}/{execution_id}")).json()
        assert body["status"] == "TERMINATED" and body["end_time"] is not None
    again = await wf_client.post(f"{EXECUTIONS}/{first}/terminate")
    assert again.status_code == 409 and again.json()["code"] == "WF_1102"
    history = (await wf_client.get(f"{EXECUTIONS}/{first}/history")).json()
    last = history["events"][-1]
    assert last["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED"
    assert last["workflowExecutionTerminatedEventAttributes"]["reason"] == "enough"


async def test_batch_cancel_and_terminate_report_each_id(
    wf_app: FastAPI, wf_client: httpx.AsyncClient, deployment: str
) -> None:
    good = await start(wf_client, "echo", {"sleep": 60})
    done = await start(wf_client, "echo", {"x": 1}, wait_for_result=True, timeout_seconds=20)
    other = await create_tenant(wf_app.state.services.db)
    async with make_client(wf_app, other.key) as stranger:
        await register(stranger, deployment)
        foreign = await start(stranger, "echo", {"sleep": 60})
    ids = [good, "no-such-execution", done, foreign, "x" * 300, good]
    response = await wf_client.post(f"{EXECUTIONS}/cancel", json={"execution_ids": ids})
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert set(results) == {good, "no-such-execution", done, foreign, "x" * 300}
    assert results[good] == {"status": "success", "error": None}
    for failed in ("no-such-execution", foreign, "x" * 300):
        assert results[failed]["status"] == "failure"
        assert "not found" in results[failed]["error"]
    assert results[done]["status"] == "failure" and "not running" in results[done]["error"]
    await wait_status(wf_client, good, "CANCELED")

    running = await start(wf_client, "echo", {"sleep": 60})
    response = await wf_client.post(
        f"{EXECUTIONS}/terminate", json={"execution_ids": [running, foreign]}
    )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert results[running]["status"] == "success"
    assert results[foreign]["status"] == "failure"
    assert (await wf_client.get(f"{EXECUTIONS}/{running}")).json()["status"] == "TERMINATED"
    # The other workspace's execution was not touched.
    async with make_client(wf_app, other.key) as stranger:
        assert (await stranger.get(f"{EXECUTIONS}/{foreign}")).json()["status"] == "RUNNING"

    empty = await wf_client.post(f"{EXECUTIONS}/cancel", json={"execution_ids": []})
    assert empty.status_code == 200 and empty.json() == {"results": {}}
    too_many = await wf_client.post(
        f"{EXECUTIONS}/cancel", json={"execution_ids": [f"e{i}" for i in range(101)]}
    )
    assert too_many.status_code == 422


async def test_signal_query_update_then_finish(
    wf_client: httpx.AsyncClient, deployment: str
) -> None:
    execution_id = await start_counter(wf_client, 1)
    url = f"{EXECUTIONS}/{execution_id}"
    response = await wf_client.post(f"{url}/signals", json={"name": "add", "input": {"value": 4}})
    assert response.status_code == 202, response.text
    assert response.json() == {"message": "Signal accepted"}
    await query_until(wf_client, execution_id, 5)
    response = await wf_client.post(
        f"{url}/updates", json={"name": "set_total", "input": {"value": 40}}
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"update_name": "set_total", "result": 5}
    response = await wf_client.post(f"{url}/signals", json={"name": "add", "input": {"value": 2}})
    assert response.status_code == 202
    response = await wf_client.post(f"{url}/signals", json={"name": "finish", "input": None})
    assert response.status_code == 202
    body = await wait_status(wf_client, execution_id, "COMPLETED")
    assert body["result"] == {"total": 42}

    # Closed: signals and updates are refused as not running; a query still answers (the
    # worker replays the history).
    response = await wf_client.post(f"{url}/signals", json={"name": "add", "input": {}})
    assert response.status_code == 409 and response.json()["code"] == "WF_1102"
    response = await wf_client.post(f"{url}/updates", json={"name": "set_total", "input": {}})
    assert response.status_code == 409 and response.json()["code"] == "WF_1102"
    response = await wf_client.post(f"{url}/queries", json={"name": "total"})
    assert response.json()["result"] == 42


async def test_unknown_handlers_and_bad_input_are_4xx(
    wf_client: httpx.AsyncClient, deployment: str
) -> None:
    execution_id = await start_counter(wf_client)
    url = f"{EXECUTIONS}/{execution_id}"
    for kind in ("signals", "queries", "updates"):
        response = await wf_client.post(f"{url}/{kind}", json={"name": "nope", "input": {}})
        assert response.status_code == 400, (kind, response.text)
        assert "nope" in response.json()["detail"]
        assert response.json()["code"] == "WF_1000"
        long_name = await wf_client.post(f"{url}/{kind}", json={"name": "n" * 257})
        assert long_name.status_code == 422
        no_name = await wf_client.post(f"{url}/{kind}", json={"input": {}})
        assert no_name.status_code == 422
    # The execution is unharmed.
    response = await wf_client.post(f"{url}/queries", json={"name": "total"})
    assert response.status_code == 200 and response.json()["result"] == 0

    long_id = "e" * 300
    for method, path, body in (
        ("POST", "cancel", None),
        ("POST", "terminate", None),
        ("POST", "reset", {"event_id": 3}),
        ("POST", "signals", {"name": "add"}),
        ("POST", "queries", {"name": "total"}),
        ("POST", "updates", {"name": "set_total"}),
        ("GET", "history", None),
    ):
        for target in (long_id, "no-such-execution"):
            response = await wf_client.request(method, f"{EXECUTIONS}/{target}/{path}", json=body)
            assert response.status_code == 404, (path, response.text)
            assert response.json()["code"] == "WF_1100"


async def test_history_is_temporal_json_with_decoded_payloads(
    wf_client: httpx.AsyncClient, deployment: str
) -> None:
    execution_id = await start(
        wf_client, "echo", {"shout": "hi"}, wait_for_result=True, timeout_seconds=20
    )
    response = await wf_client.get(f"{EXECUTIONS}/{execution_id}/history")
    assert response.status_code == 200, response.text
    events = response.json()["events"]
    kinds = [e["eventType"] for e in events]
    assert kinds[0] == "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"
    assert kinds[-1] == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"
    assert "EVENT_TYPE_ACTIVITY_TASK_COMPLETED" in kinds
    started = events[0]["workflowExecutionStartedEventAttributes"]
    assert started["input"]["payloads"] == [{"shout": "hi"}]
    completed = events[-1]["workflowExecutionCompletedEventAttributes"]
    assert completed["result"]["payloads"] == [{"result": "HI"}]

    raw = await wf_client.get(
        f"{EXECUTIONS}/{execution_id}/history", params={"decode_payloads": "false"}
    )
    started = raw.json()["events"][0]["workflowExecutionStartedEventAttributes"]
    payload = started["input"]["payloads"][0]
    assert set(payload) == {"metadata", "data"} and "encoding" in payload["metadata"]


async def test_reset_a_completed_run_starts_a_new_one(
    wf_client: httpx.AsyncClient, deployment: str
) -> None:
    execution_id = await start(
        wf_client, "echo", {"x": 1}, wait_for_result=True, timeout_seconds=20
    )
    before = (await wf_client.get(f"{EXECUTIONS}/{execution_id}")).json()
    assert before["status"] == "COMPLETED"
    events = (await wf_client.get(f"{EXECUTIONS}/{execution_id}/history")).json()["events"]
    task_done = next(
        int(e["eventId"]) for e in events if e["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_COMPLETED"
    )
    url = f"{EXECUTIONS}/{execution_id}/reset"

    for bad in ({"event_id": 2**63}, {"event_id": 0}, {"event_id": "x"}, {}):
        response = await wf_client.post(url, json=bad)
        assert response.status_code == 422, (bad, response.text)
    # Event 1 is the start, not the end of a workflow task: Temporal refuses it.
    response = await wf_client.post(url, json={"event_id": 1})
    assert response.status_code == 400, response.text

    response = await wf_client.post(url, json={"event_id": task_done, "reason": "again"})
    assert response.status_code == 204, response.text
    assert response.content == b""
    after = (await wf_client.get(f"{EXECUTIONS}/{execution_id}")).json()
    assert after["run_id"] != before["run_id"]
    assert after["status"] in ("RUNNING", "COMPLETED")
    final = await wait_status(wf_client, execution_id, "COMPLETED")
    assert final["result"] == {"result": {"x": 1}}
    assert final["run_id"] == after["run_id"]


async def test_another_workspace_gets_404_everywhere(
    wf_app: FastAPI, wf_client: httpx.AsyncClient, deployment: str
) -> None:
    execution_id = await start_counter(wf_client)
    run_id = (await wf_client.get(f"{EXECUTIONS}/{execution_id}")).json()["run_id"]
    other = await create_tenant(wf_app.state.services.db)
    async with make_client(wf_app, other.key) as stranger:
        for method, path, body in (
            ("GET", "", None),
            ("POST", "/cancel", None),
            ("POST", "/terminate", {"reason": "mine"}),
            ("POST", "/reset", {"event_id": 3}),
            ("POST", "/signals", {"name": "add", "input": {"value": 1}}),
            ("POST", "/queries", {"name": "total"}),
            ("POST", "/updates", {"name": "set_total", "input": {"value": 9}}),
            ("GET", "/history", None),
        ):
            response = await stranger.request(
                method, f"{EXECUTIONS}/{execution_id}{path}", json=body
            )
            assert response.status_code == 404, (path, response.text)
            assert response.json()["code"] == "WF_1100"
        for path in (f"/v1/workflows/runs/{run_id}", f"/v1/workflows/runs/{run_id}/history"):
            response = await stranger.get(path)
            assert response.status_code == 404, (path, response.text)
            assert response.json()["code"] == "WF_1100"
        listed = (await stranger.get("/v1/workflows/runs")).json()
        assert listed["executions"] == []
    # Nothing the stranger tried reached the execution.
    url = f"{EXECUTIONS}/{execution_id}"
    assert (await wf_client.post(f"{url}/queries", json={"name": "total"})).json()["result"] == 0
    assert (await wf_client.get(url)).json()["status"] == "RUNNING"
    assert (await wf_client.get(f"/v1/workflows/runs/{run_id}")).status_code == 200


async def test_the_official_sdk_drives_every_action(wf_app: FastAPI, deployment: str) -> None:
    http = make_client(wf_app, API_KEY)
    async with http:
        sdk = Mistral(api_key=API_KEY, server_url="http://test", async_client=http)
        workflows = sdk.workflows
        executions = workflows.executions

        started = await workflows.execute_workflow_async(
            workflow_identifier="counter", input={"start": 2}
        )
        assert isinstance(started, WorkflowExecutionResponse)
        execution_id = started.execution_id
        await query_until(http, execution_id, 2)
        signal = await executions.signal_workflow_execution_async(
            execution_id=execution_id, name="add", input={"value": 3}
        )
        assert signal.message == "Signal accepted"
        await query_until(http, execution_id, 5)
        query = await executions.query_workflow_execution_async(
            execution_id=execution_id, name="total"
        )
        assert query.query_name == "total" and query.result == 5
        update = await executions.update_workflow_execution_async(
            execution_id=execution_id, name="set_total", input={"value": 7}
        )
        assert update.update_name == "set_total" and update.result == 5
        history = await executions.get_workflow_execution_history_async(execution_id=execution_id)
        assert history["events"][0]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"
        assert (
            await executions.terminate_workflow_execution_async(execution_id=execution_id)
        ) is None
        terminated = await executions.get_workflow_execution_async(execution_id=execution_id)
        assert terminated.status == "TERMINATED"

        # Reset the terminated run to its first workflow task: a new run, running again.
        task_done = next(
            int(e["eventId"])
            for e in history["events"]
            if e["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_COMPLETED"
        )
        await executions.reset_workflow_async(
            execution_id=execution_id, event_id=task_done, reason="sdk"
        )
        reset = await executions.get_workflow_execution_async(execution_id=execution_id)
        assert reset.status == "RUNNING" and reset.run_id != started.run_id
        assert await executions.cancel_workflow_execution_async(execution_id=execution_id) is None
        await wait_status(http, execution_id, "CANCELED")

        others = [
            (
                await workflows.execute_workflow_async(
                    workflow_identifier="echo", input={"sleep": 60}
                )
            ).execution_id
            for _ in range(2)
        ]
        batch = await executions.batch_cancel_workflow_executions_async(
            execution_ids=[others[0], "unknown-id"]
        )
        assert batch.results is not None
        assert batch.results[others[0]].status == "success"
        assert batch.results["unknown-id"].status == "failure"
        batch = await executions.batch_terminate_workflow_executions_async(
            execution_ids=[others[1]]
        )
        assert batch.results is not None and batch.results[others[1]].status == "success"

        page = await workflows.runs.list_runs_async(page_size=2)
        assert page is not None
        assert len(page.result.executions) == 2
        seen = [e.execution_id for e in page.result.executions]
        following = await page.next()  # type: ignore[misc]  # the SDK types next() loosely
        assert following is not None
        seen += [e.execution_id for e in following.result.executions]
        assert set(seen) == {execution_id, *others}
        old_run = await workflows.runs.get_run_async(run_id=started.run_id or "")
        assert old_run.execution_id == execution_id and old_run.status == "TERMINATED"
        assert old_run.run_id == started.run_id
        run_history = await workflows.runs.get_run_history_async(run_id=started.run_id or "")
        kinds = [e["eventType"] for e in run_history["events"]]
        assert kinds[-1] == "EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED"
