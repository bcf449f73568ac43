"""Register, execute (and wait), read back: the core of the workflows API on a real Temporal."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.workflows.plain_worker import register, running_worker

pytestmark = pytest.mark.both_databases("maestrale.workflows.executions.repository")


def _queue() -> str:
    return f"dep-{uuid.uuid4().hex[:8]}"


async def test_register_then_execute_and_wait(
    wf_client: httpx.AsyncClient, temporal_address: str, namespace: str
) -> None:
    queue = _queue()
    registered = await register(wf_client, queue)
    assert registered["has_conflicts"] is False
    refs = registered["workflow_registration_refs"]
    assert len(refs) == 2 and all(
        r["workflow_version_id"] == r["workflow_registration_id"] for r in refs
    )
    async with running_worker(temporal_address, namespace, queue):
        response = await wf_client.post(
            "/v1/workflows/echo/execute",
            json={"input": {"shout": "hello"}, "wait_for_result": True, "timeout_seconds": 20},
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["status"] == "COMPLETED"
        assert body["result"] == {"result": "HELLO"}
        assert body["deployment_name"] == queue
        again = await wf_client.get(f"/v1/workflows/executions/{body['execution_id']}")
        assert again.json()["status"] == "COMPLETED"
        assert again.json()["result"] == {"result": "HELLO"}
        assert again.json()["search_keys"] is None
        # 3.x: the run's search attributes, as Temporal has them (its own `BuildIds` at least),
        # when asked for.
        keyed = await wf_client.get(
            f"/v1/workflows/executions/{body['execution_id']}",
            params={"include_search_keys": True},
        )
        assert keyed.status_code == 200 and keyed.json()["search_keys"]
        assert all(isinstance(v, str | None) for v in keyed.json()["search_keys"].values())


async def test_execute_without_waiting_then_get(
    wf_client: httpx.AsyncClient, temporal_address: str, namespace: str
) -> None:
    queue = _queue()
    await register(wf_client, queue)
    response = await wf_client.post(
        "/v1/workflows/echo/execute",
        json={"input": {"sleep": 30}, "execution_id": "my-exec-" + queue},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "RUNNING" and body["result"] is None and body["end_time"] is None
    assert body["execution_id"] == "my-exec-" + queue
    async with running_worker(temporal_address, namespace, queue):
        waited = await wf_client.post(
            "/v1/workflows/echo/execute",
            json={"input": {}, "execution_id": "my-exec-" + queue},
        )
        assert waited.status_code == 409, waited.text
        assert waited.json()["code"] == "WF_1101"


async def test_wait_that_times_out_answers_running(
    wf_client: httpx.AsyncClient, temporal_address: str, namespace: str
) -> None:
    queue = _queue()
    await register(wf_client, queue)
    response = await wf_client.post(
        "/v1/workflows/echo/execute",
        json={"input": {"sleep": 30}, "wait_for_result": True, "timeout_seconds": 0.5},
    )
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "RUNNING"


async def test_unknown_workflow_is_a_404_in_the_platform_shape(
    wf_client: httpx.AsyncClient,
) -> None:
    response = await wf_client.post("/v1/workflows/nope/execute", json={})
    assert response.status_code == 404
    assert response.json()["code"] == "WF_1100"
