"""A verified delivery starts a workflow execution on Temporal (the session's dev server), with
the event as its input, once: a retried dispatch finds the execution it started."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from maestrale.core.jobs.queue import JobQueue
from maestrale.inbound.triggers.tables import TriggerEvent
from maestrale.inbound.triggers.tasks import KIND
from tests.inbound.trigger_support import deliver, github_webhook, run_jobs, trigger_body
from tests.support.app_fixtures import make_client
from tests.workflows.conftest import namespace, wf_app, wf_client  # noqa: F401  (fixtures)
from tests.workflows.plain_worker import register, running_worker

pytest.importorskip("temporalio", reason="temporalio missing: install maestrale[workflows]")


async def test_delivery_starts_a_workflow_execution_once(
    wf_app: FastAPI,  # noqa: F811
    wf_client: httpx.AsyncClient,  # noqa: F811
    temporal_address: str,
    namespace: str,  # noqa: F811
) -> None:
    queue = f"dep-{uuid.uuid4().hex[:8]}"
    await register(wf_client, queue)
    webhook = await github_webhook(wf_client)
    created = await wf_client.post(
        "/v1/triggers",
        json=trigger_body(
            webhook["id"], "workflows", "echo", "start_workflow", filters="event_type == 'push'"
        ),
    )
    assert created.status_code == 201, created.text
    trigger = created.json()
    async with make_client(wf_app, None) as anon:
        assert (await deliver(anon, webhook, {"repository": {"name": "x"}})).status_code == 200
    await run_jobs(wf_app)
    events = (await wf_client.get(f"/v1/triggers/{trigger['id']}/events")).json()["data"]
    assert [e["status"] for e in events] == ["TRIGGERED"], events
    url = events[0]["url"]
    execution_id = url.rsplit("/", 1)[1]
    assert url == f"/v1/workflows/executions/{execution_id}"
    async with running_worker(temporal_address, namespace, queue):
        for _ in range(600):
            got = (await wf_client.get(f"/v1/workflows/executions/{execution_id}")).json()
            if got["status"] != "RUNNING":
                break
            await asyncio.sleep(0.1)
    assert got["status"] == "COMPLETED", got
    started = got["result"]["result"]
    assert started["event"] == {"repository": {"name": "x"}}
    assert started["event_type"] == "push" and started["trigger_id"] == trigger["id"]
    assert started["trigger_depth"] == 1
    assert started["headers"] == {"X-Maestrale-Trigger-Depth": "1"}

    # A retry of the dispatch after a crash before TRIGGERED was written: the closed execution
    # is found (by its id, derived from trigger and delivery), no second run starts.
    services = wf_app.state.services
    async with services.db.transaction() as work:
        await work.session.execute(
            sa.update(TriggerEvent)
            .where(TriggerEvent.id == events[0]["event_id"])
            .values(status="SUBMITTED", url=None)
        )
        tenant = Tenant(trigger["organization_id"], trigger["workspace_id"])
        await JobQueue(services.db).enqueue(
            work.session, KIND, {"delivery_id": events[0]["source_id"]}, tenant=tenant
        )
    await run_jobs(wf_app)
    again = (await wf_client.get(f"/v1/triggers/{trigger['id']}/events")).json()["data"]
    assert [(e["status"], e["url"]) for e in again] == [("TRIGGERED", url)]
    after = (await wf_client.get(f"/v1/workflows/executions/{execution_id}")).json()
    assert after["status"] == "COMPLETED" and after["run_id"] == got["run_id"]
