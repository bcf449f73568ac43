"""What a job tells its creator before it trains: the real base model behind a platform name,
settings too weak for that small base, and a duration measured on the jobs that finished here."""

from __future__ import annotations

import math
from datetime import timedelta

import httpx
from fastapi import FastAPI

from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.fine_tuning.tables import FineTuningEvent, FineTuningJob
from tests.fine_tuning.support import chat_lines, completion_body, create_job, data_file


async def test_a_platform_name_and_platform_settings_are_explained(
    client: httpx.AsyncClient,
) -> None:
    training = await data_file(client, chat_lines(20))
    # The platform's docs: 10 steps at learning rate 1e-4, on a platform name (an alias).
    platform = {"training_steps": 10, "learning_rate": 1e-4}
    body = completion_body(training, model="platform-7b", hyperparameters=platform)
    created = await create_job(client, body)
    assert created["model"] == "platform-7b"  # as asked; the job trains as asked too
    assert created["hyperparameters"]["learning_rate"] == 1e-4
    got = (await client.get(f"/v1/fine_tuning/jobs/{created['id']}")).json()
    notes = {e["name"]: e["data"] for e in got["events"] if e["name"] != "status-updated"}
    assert notes["base-model"]["base_model"] == "small-chat"
    assert "'platform-7b' is a name of 'small-chat' here" in notes["base-model"]["message"]
    warning = notes["hyperparameters-warning"]
    assert warning["advised_learning_rate"] == 1e-3 and warning["learning_rate"] == 1e-4
    assert warning["message"].startswith("learning_rate 0.0001 (below 0.0005) will teach")

    dry = await client.post("/v1/fine_tuning/jobs", params={"dry_run": "true"}, json=body)
    details = dry.json()["details"]
    assert "is a name of 'small-chat'" in details and "learning_rate 0.0001" in details

    # Left out, the rate is the base's own, and there is nothing to warn of.
    fitting = completion_body(training, model="small-chat", hyperparameters={})
    plain = await create_job(client, fitting)
    assert plain["hyperparameters"]["learning_rate"] == 1e-3
    got = (await client.get(f"/v1/fine_tuning/jobs/{plain['id']}")).json()
    assert {e["name"] for e in got["events"]} == {"status-updated"}


async def finish(db: Database, job_id: str, startup: float, training: float) -> None:
    """Make the job one that succeeded: started, running `startup` s later, done `training` s
    after that."""
    began = utcnow() - timedelta(hours=1)
    moments = [
        ("STARTED", began),
        ("RUNNING", began + timedelta(seconds=startup)),
        ("SUCCESS", began + timedelta(seconds=startup + training)),
    ]
    async with db.transaction() as work:
        job = await work.session.get(FineTuningJob, job_id)
        assert job is not None
        job.status = "SUCCESS"
        for status, at in moments:
            work.session.add(
                FineTuningEvent(
                    job_id=job_id, name="status-updated", data={"status": status}, created_at=at
                )
            )


async def test_the_duration_is_measured_on_finished_jobs(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    training = await data_file(client, chat_lines(16))
    body = completion_body(training)
    first = await create_job(client, body)
    tokens = first["metadata"]["train_tokens"]
    assert first["metadata"]["expected_duration_seconds"] == math.ceil(20 + tokens / 7.5)
    # It took 12 s to start and trained its tokens at 3 a second.
    await finish(app.state.services.db, first["id"], 12, tokens / 3)
    dry = (await client.post("/v1/fine_tuning/jobs", params={"dry_run": "true"}, json=body)).json()
    assert dry["train_tokens"] == tokens
    assert dry["expected_duration_seconds"] == math.ceil(12 + tokens / 3)
    assert "3.0 training tokens per second (measured on the last 1 finished job" in dry["details"]
    # Another base is not measured by it.
    other = await client.post(
        "/v1/fine_tuning/jobs",
        params={"dry_run": "true"},
        json=completion_body(training, model="small-chat"),
    )
    assert other.json()["expected_duration_seconds"] == math.ceil(20 + tokens / 7.5)
