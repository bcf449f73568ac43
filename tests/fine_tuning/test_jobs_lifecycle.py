"""A job after its creation: cancel in each status, start, what the worker records (statuses and
checkpoints, through `FineTuningRepository`), and a job whose queue job ended for good shown as
such."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from maestrale.core.db import Database
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.tables import Job, JobStatus
from maestrale.fine_tuning import states
from maestrale.fine_tuning.queueing import TRAIN_KIND
from maestrale.fine_tuning.repository import FineTuningRepository
from maestrale.fine_tuning.tables import FineTuningJob
from tests.fine_tuning.support import (
    chat_lines,
    completion_body,
    create_job,
    data_file,
    queue_jobs,
    statuses,
)

pytestmark = pytest.mark.both_databases("maestrale.fine_tuning.repository")


async def new_job(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    training = await data_file(client, chat_lines(4))
    return await create_job(client, completion_body(training, **body))


async def as_worker(app: FastAPI, job_id: str, status: str, **data: Any) -> None:
    """What the worker does as training goes: a status change with its event."""
    db: Database = app.state.services.db
    async with db.transaction() as work:
        row = await work.session.get(FineTuningJob, job_id)
        assert row is not None
        jobs = FineTuningRepository(work.session, Tenant(row.organization_id, row.workspace_id))
        await jobs.record_status(row, status, **data)


async def cancel(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    resp = await client.post(f"/v1/fine_tuning/jobs/{job_id}/cancel")
    assert resp.status_code == 200, resp.text
    job: dict[str, Any] = resp.json()
    return job


async def test_cancel_a_queued_job(app: FastAPI, client: httpx.AsyncClient) -> None:
    job = await new_job(client)
    cancelled = await cancel(client, job["id"])
    assert cancelled["status"] == "CANCELLED"
    assert statuses(cancelled)[-1] == "CANCELLED"
    [queued] = await queue_jobs(app)
    assert queued.status == JobStatus.CANCELLED
    again = await cancel(client, job["id"])
    assert again["status"] == "CANCELLED" and len(again["events"]) == len(cancelled["events"])
    start = await client.post(f"/v1/fine_tuning/jobs/{job['id']}/start")
    assert start.status_code == 409


async def test_cancel_a_job_waiting_for_start(app: FastAPI, client: httpx.AsyncClient) -> None:
    job = await new_job(client, auto_start=False)
    cancelled = await cancel(client, job["id"])
    assert cancelled["status"] == "CANCELLED"
    assert statuses(cancelled) == ["QUEUED", "VALIDATING", "VALIDATED", "CANCELLED"]
    assert await queue_jobs(app) == []


async def test_cancel_a_claimed_job_asks_its_worker(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    job = await new_job(client)
    queue = JobQueue(app.state.services.db)
    [claimed] = await queue.claim("test-worker", limit=1, kinds=[TRAIN_KIND])
    assert claimed.payload == {"job_id": job["id"]}
    # Claimed, but the worker has not recorded RUNNING yet: it holds the job all the same.
    requested = await cancel(client, job["id"])
    assert requested["status"] == "CANCELLATION_REQUESTED"
    [held] = await queue_jobs(app)
    assert held.status == JobStatus.RUNNING and held.cancel_requested is True
    assert (await cancel(client, job["id"]))["status"] == "CANCELLATION_REQUESTED"
    await as_worker(app, job["id"], states.CANCELLED)
    assert (await cancel(client, job["id"]))["status"] == "CANCELLED"


async def test_cancel_a_running_job(app: FastAPI, client: httpx.AsyncClient) -> None:
    job = await new_job(client)
    queue = JobQueue(app.state.services.db)
    await queue.claim("test-worker", limit=1, kinds=[TRAIN_KIND])
    await as_worker(app, job["id"], states.STARTED)
    await as_worker(app, job["id"], states.RUNNING)
    requested = await cancel(client, job["id"])
    assert requested["status"] == "CANCELLATION_REQUESTED"
    assert statuses(requested)[-3:] == ["STARTED", "RUNNING", "CANCELLATION_REQUESTED"]


async def test_a_finished_job_is_left_as_it_is(app: FastAPI, client: httpx.AsyncClient) -> None:
    job = await new_job(client)
    await as_worker(app, job["id"], states.SUCCESS)
    done = await cancel(client, job["id"])
    assert done["status"] == "SUCCESS" and statuses(done)[-1] == "SUCCESS"


async def test_checkpoints_are_recorded_once_per_step(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    job = await new_job(client)
    db: Database = app.state.services.db
    async with db.transaction() as work:
        row = await work.session.get(FineTuningJob, job["id"])
        assert row is not None
        jobs = FineTuningRepository(work.session, Tenant(row.organization_id, row.workspace_id))
        assert await jobs.add_checkpoint(row, 20, 1.5, 1.7, 0.4)
        assert await jobs.add_checkpoint(row, 10, 2.5, None, None)
        # A resumed worker reporting step 20 again writes nothing.
        assert not await jobs.add_checkpoint(row, 20, 9.9, 9.9, 0.0)
    got = (await client.get(f"/v1/fine_tuning/jobs/{job['id']}")).json()
    assert [c["step_number"] for c in got["checkpoints"]] == [10, 20]
    assert got["checkpoints"][1]["metrics"] == {
        "train_loss": 1.5,
        "valid_loss": 1.7,
        "valid_mean_token_accuracy": 0.4,
    }
    assert got["checkpoints"][0]["metrics"]["valid_loss"] is None
    assert all(isinstance(c["created_at"], int) for c in got["checkpoints"])


async def _end_queue_job(app: FastAPI, status: str, error: str) -> None:
    db: Database = app.state.services.db
    async with db.transaction() as work:
        await work.session.execute(
            sa.update(Job).where(Job.kind == TRAIN_KIND).values(status=status, last_error=error)
        )


async def test_a_job_whose_worker_gave_up_is_failed(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    job = await new_job(client)
    await as_worker(app, job["id"], states.RUNNING)
    await _end_queue_job(app, JobStatus.FAILED, "lease expired after 5 attempts")
    listed = (await client.get("/v1/fine_tuning/jobs")).json()
    assert listed["data"][0]["status"] == "FAILED"
    got = (await client.get(f"/v1/fine_tuning/jobs/{job['id']}")).json()
    assert got["status"] == "FAILED"
    assert got["events"][-1]["data"] == {
        "status": "FAILED",
        "error": "lease expired after 5 attempts",
    }
    assert statuses(got).count("FAILED") == 1


async def test_a_cancel_requested_job_whose_queue_job_ended(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    job = await new_job(client)
    await JobQueue(app.state.services.db).claim("w", limit=1, kinds=[TRAIN_KIND])
    await cancel(client, job["id"])
    await _end_queue_job(app, JobStatus.FAILED, "cancelled; lease expired")
    got = (await client.get(f"/v1/fine_tuning/jobs/{job['id']}")).json()
    assert got["status"] == "CANCELLED"
