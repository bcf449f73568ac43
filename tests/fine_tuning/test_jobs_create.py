"""Creating fine-tuning jobs over HTTP: what a job records, dry runs, auto_start false then
start, and the estimates."""

from __future__ import annotations

import math

import httpx
from fastapi import FastAPI

from maestrale.core.jobs.tables import JobStatus
from maestrale.fine_tuning.queueing import TRAIN_KIND
from tests.fine_tuning.support import (
    CHAT,
    chat_lines,
    classifier_body,
    classifier_lines,
    completion_body,
    create_job,
    data_file,
    queue_jobs,
    statuses,
)


async def test_a_completion_job_is_validated_and_queued(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    training = await data_file(client, chat_lines(20))
    validation = await data_file(client, chat_lines(4), name="valid.jsonl")
    created = await create_job(
        client, completion_body(training, validation_files=[validation], suffix="my-model_1")
    )
    assert created["object"] == "job" and created["job_type"] == "completion"
    assert created["status"] == "QUEUED" and created["auto_start"] is True
    assert created["model"] == CHAT and created["suffix"] == "my-model_1"
    assert created["training_files"] == [training]
    assert created["validation_files"] == [validation]
    assert created["integrations"] == [] and created["repositories"] == []
    assert created["fine_tuned_model"] is None and created["trained_tokens"] is None
    hyper = created["hyperparameters"]
    # 20 examples, 3 epochs by default, 8 examples a step.
    assert hyper["training_steps"] == math.ceil(3 * 20 / 8) == 8
    assert hyper["epochs"] == 3 and hyper["learning_rate"] == 0.0002
    assert hyper["fim_ratio"] == 0 and hyper["seq_len"] == 2048
    assert hyper["weight_decay"] is not None and hyper["warmup_fraction"] is not None
    meta = created["metadata"]
    assert meta["data_tokens"] > 0
    assert meta["train_tokens"] == meta["train_tokens_per_step"] * 8
    assert meta["cost"] == round(meta["train_tokens"] / 1e6 * 2.0, 6) and meta["cost"] > 0
    assert meta["cost_currency"] == "USD"
    # The defaults until a job of the base finished here: 20 s to start, 7.5 tokens a second.
    assert meta["expected_duration_seconds"] == math.ceil(20 + meta["train_tokens"] / 7.5)
    assert meta["estimated_start_time"] >= created["created_at"]

    got = (await client.get(f"/v1/fine_tuning/jobs/{created['id']}")).json()
    assert statuses(got) == ["QUEUED", "VALIDATING", "VALIDATED", "QUEUED"]
    assert all(e["name"] == "status-updated" for e in got["events"])
    assert got["events"][2]["data"]["training_examples"] == 20
    assert got["events"][2]["data"]["validation_examples"] == 4
    assert got["checkpoints"] == []
    [queued] = await queue_jobs(app)
    assert queued.kind == TRAIN_KIND and queued.payload == {"job_id": created["id"]}
    assert queued.status == JobStatus.QUEUED and queued.max_attempts == 5


async def test_the_model_is_kept_as_named(client: httpx.AsyncClient) -> None:
    training = await data_file(client, chat_lines(3))
    created = await create_job(client, completion_body(training, model="tiny"))
    assert created["model"] == "tiny"
    listed = (await client.get("/v1/fine_tuning/jobs", params={"model": CHAT})).json()
    assert [job["id"] for job in listed["data"]] == [created["id"]]


async def test_training_steps_given(client: httpx.AsyncClient) -> None:
    training = await data_file(client, chat_lines(4))
    body = completion_body(training, hyperparameters={"training_steps": 5, "seq_len": 64})
    created = await create_job(client, body)
    assert created["hyperparameters"]["training_steps"] == 5
    assert created["hyperparameters"]["epochs"] is None
    assert created["hyperparameters"]["seq_len"] == 64
    assert created["metadata"]["train_tokens"] == 5 * created["metadata"]["train_tokens_per_step"]


async def test_a_classifier_job(client: httpx.AsyncClient) -> None:
    training = await data_file(client, classifier_lines(16))
    created = await create_job(client, classifier_body(training))
    assert created["job_type"] == "classifier" and created["status"] == "QUEUED"
    assert "fim_ratio" not in created["hyperparameters"]
    assert created["hyperparameters"]["training_steps"] == math.ceil(2 * 16 / 8)
    got = (await client.get(f"/v1/fine_tuning/jobs/{created['id']}")).json()
    assert got["classifier_targets"] == [
        {
            "name": "sentiment",
            "labels": ["good", "bad"],
            "weight": 1.0,
            "loss_function": "single_class",
        }
    ]


async def test_the_job_type_follows_the_classifier_targets(client: httpx.AsyncClient) -> None:
    training = await data_file(client, classifier_lines(4))
    body = classifier_body(training)
    del body["job_type"]
    assert (await create_job(client, body))["job_type"] == "classifier"


async def test_dry_run_writes_nothing(app: FastAPI, client: httpx.AsyncClient) -> None:
    training = await data_file(client, chat_lines(16))
    for params, extra in (({"dry_run": "true"}, {}), ({}, {"dry_run": True})):
        resp = await client.post(
            "/v1/fine_tuning/jobs", params=params, json=completion_body(training, **extra)
        )
        assert resp.status_code == 200, resp.text
        meta = resp.json()
        assert meta["object"] == "job.metadata" and meta["job_type"] == "completion"
        assert meta["details"].startswith("expected duration: 20 s to start, then 7.5 training")
        assert meta["deprecated"] is True
        assert meta["training_steps"] == 6 and meta["epochs"] == 3
        assert meta["data_tokens"] > 0 and meta["train_tokens"] > 0
        assert meta["cost"] > 0 and meta["cost_currency"] == "USD"
        assert meta["expected_duration_seconds"] > 0 and meta["estimated_start_time"] is None
    assert (await client.get("/v1/fine_tuning/jobs")).json() == {
        "object": "list",
        "data": [],
        "total": 0,
    }
    assert await queue_jobs(app) == []


async def test_auto_start_false_waits_for_start(app: FastAPI, client: httpx.AsyncClient) -> None:
    training = await data_file(client, chat_lines(8))
    created = await create_job(client, completion_body(training, auto_start=False))
    assert created["status"] == "VALIDATED" and created["auto_start"] is False
    assert created["metadata"]["estimated_start_time"] is None
    assert await queue_jobs(app) == []

    started = await client.post(f"/v1/fine_tuning/jobs/{created['id']}/start")
    assert started.status_code == 200, started.text
    job = started.json()
    assert job["status"] == "QUEUED"
    assert statuses(job) == ["QUEUED", "VALIDATING", "VALIDATED", "QUEUED"]
    [queued] = await queue_jobs(app)
    assert queued.payload == {"job_id": created["id"]} and queued.status == JobStatus.QUEUED

    again = await client.post(f"/v1/fine_tuning/jobs/{created['id']}/start")
    assert again.status_code == 409 and again.json()["code"] == "job_not_startable"
    assert len(await queue_jobs(app)) == 1


async def test_unknown_fields_are_ignored(client: httpx.AsyncClient) -> None:
    training = await data_file(client, chat_lines(2))
    body = completion_body(training, future_field={"x": 1})
    body["hyperparameters"]["future_knob"] = 3
    assert (await create_job(client, body))["status"] == "QUEUED"
