"""Event streams: an execution's (stored events, resumption, its end on the final event or on
Temporal's word) and the workspace's (following new events, filters, keepalives, its time limit),
read as SSE and by the official SDK."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from mistralai.client import Mistral

from tests.support.app_fixtures import API_KEY
from tests.workflows.events_support import (
    LIFECYCLE,
    event,
    post_batch,
    served,
    sse,
    started_execution,
)
from tests.workflows.plain_worker import register, running_worker

pytestmark = pytest.mark.both_databases("maestrale.workflows.events.repository")


async def test_execution_stream_sends_stored_events_then_ends(
    wf_client: httpx.AsyncClient, namespace: str
) -> None:
    exec_id = await started_execution(wf_client)
    sent = [event(exec_id, kind) for kind in LIFECYCLE]
    assert (await post_batch(wf_client, sent)).status_code == 200
    # The stream ends by itself once the execution's final event was sent.
    response = await wf_client.get(f"/v1/workflows/executions/{exec_id}/stream")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    messages = sse(response.text)
    assert [m["data"]["data"]["event_id"] for m in messages] == [e["event_id"] for e in sent]
    first = messages[0]
    assert first["id"] == str(first["data"]["broker_sequence"])
    assert first["data"]["stream"] and first["data"]["timestamp"]
    assert first["data"]["workflow_context"] == {
        "namespace": namespace,
        "workflow_name": "echo",
        "workflow_exec_id": exec_id,
        "parent_workflow_exec_id": None,
        "root_workflow_exec_id": exec_id,
    }
    resumed = await wf_client.get(
        f"/v1/workflows/executions/{exec_id}/stream", params={"last_event_id": messages[1]["id"]}
    )
    assert [m["id"] for m in sse(resumed.text)] == [m["id"] for m in messages[2:]]
    stored = await wf_client.get(
        f"/v1/workflows/executions/{exec_id}/stream", params={"event_source": "DATABASE"}
    )
    assert len(sse(stored.text)) == 4
    bad = await wf_client.get(
        f"/v1/workflows/executions/{exec_id}/stream", params={"last_event_id": "x"}
    )
    assert bad.status_code == 400


async def test_execution_stream_ends_when_temporal_says_closed(
    wf_client: httpx.AsyncClient, temporal_address: str, namespace: str
) -> None:
    queue = f"dep-{uuid.uuid4().hex[:8]}"
    await register(wf_client, queue)
    async with running_worker(temporal_address, namespace, queue):
        done = await wf_client.post(
            "/v1/workflows/echo/execute",
            json={"input": {"a": 1}, "wait_for_result": True, "timeout_seconds": 20},
        )
    exec_id = done.json()["execution_id"]
    assert done.json()["status"] == "COMPLETED"
    # The plain worker reports no events: the stream ends on Temporal's word, after its grace.
    started = time.monotonic()
    response = await wf_client.get(f"/v1/workflows/executions/{exec_id}/stream")
    assert response.status_code == 200 and sse(response.text) == []
    assert time.monotonic() - started < 15


@pytest.mark.timeout(60)
async def test_events_stream_follows_new_events(
    wf_app: FastAPI, wf_client: httpx.AsyncClient
) -> None:
    exec_id = f"ex-{uuid.uuid4().hex}"
    sent = [event(exec_id, kind) for kind in LIFECYCLE]
    assert (await post_batch(wf_client, sent[:1])).status_code == 200
    async with served(wf_app) as url:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as live:
            params: dict[str, Any] = {"workflow_exec_id": exec_id, "scope": "*"}
            async with live.stream("GET", "/v1/workflows/events/stream", params=params) as stream:
                assert stream.status_code == 200
                text = ""
                posted = False
                async for chunk in stream.aiter_text():
                    text += chunk
                    if not posted:  # the stored one came: the others arrive while it follows
                        posted = True
                        assert (await post_batch(wf_client, sent[1:])).status_code == 200
                        # An activity's last event may come after the workflow's end.
                        late = event(exec_id, "ACTIVITY_TASK_COMPLETED")
                        assert (await post_batch(wf_client, [late])).status_code == 200
            messages = sse(text)
            ids = [m["data"]["data"]["event_id"] for m in messages]
            assert ids == [e["event_id"] for e in (*sent, late)]
            # Resume after the second, and only activity events.
            params = {"workflow_exec_id": exec_id, "start_seq": int(messages[1]["id"]) + 1}
            response = await live.get(
                "/v1/workflows/events/stream", params={**params, "scope": "activity"}
            )
            kinds = [m["data"]["data"]["event_type"] for m in sse(response.text)]
            assert kinds == ["ACTIVITY_TASK_COMPLETED", "ACTIVITY_TASK_COMPLETED"]
            # The official client reads the stream.
            sdk = Mistral(api_key=API_KEY, server_url=url)
            got = await sdk.workflows.events.get_stream_events_async(
                workflow_exec_id=exec_id, workflow_event_types=["WORKFLOW_EXECUTION_COMPLETED"]
            )
            items = [item async for item in got]
            assert len(items) == 1 and items[0].id == messages[3]["id"]
            assert items[0].data.broker_sequence == int(messages[3]["id"])
            assert type(items[0].data.data).__name__ == "WorkflowExecutionCompletedResponse"


@pytest.mark.timeout(60)
async def test_an_idle_stream_keeps_alive_and_ends_on_its_time_limit(
    wf_app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from maestrale.workflows.events import streaming

    monkeypatch.setattr(streaming, "KEEPALIVE_SECONDS", 0.3)
    monkeypatch.setattr(streaming, "MAX_STREAM_SECONDS", 2.0)
    async with served(wf_app) as url:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as live:
            started = time.monotonic()
            # Everything of the workspace, from now on: nothing comes.
            response = await live.get(
                "/v1/workflows/events/stream", headers={"last-event-id": str(2**62)}
            )
    assert response.status_code == 200
    assert ": keepalive" in response.text and sse(response.text) == []
    assert 2.0 <= time.monotonic() - started < 10
