"""Helpers of the fine-tuning tests: training files as clients upload them, job creation, and
the queue jobs behind the fine-tuning jobs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.core.db import Database
from maestrale.core.jobs.tables import Job
from maestrale.files.tables import StoredFile
from maestrale.fine_tuning.queueing import TRAIN_KIND
from tests.files.support import upload

CHAT = "tiny-chat"
CLASSIFIER = "tiny-classifier"


def chat_example(question: str, answer: str) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": question},
            {"role": "assistant", "content": answer},
        ]
    }


def chat_lines(n: int = 10) -> list[dict[str, Any]]:
    return [chat_example(f"What is {i} + 1?", f"It is {i + 1}.") for i in range(n)]


def classifier_lines(n: int = 10) -> list[dict[str, Any]]:
    return [
        {"text": f"review number {i}", "labels": {"sentiment": "good" if i % 2 else "bad"}}
        for i in range(n)
    ]


async def data_file(
    client: httpx.AsyncClient,
    lines: list[Any],
    *,
    purpose: str = "fine-tune",
    name: str = "train.jsonl",
) -> str:
    """Upload `lines` (documents, or raw strings written as they are) as a JSONL file."""
    text = "".join(
        (line if isinstance(line, str) else orjson.dumps(line).decode()) + "\n" for line in lines
    )
    resp = await upload(client, text.encode(), name, purpose=purpose)
    assert resp.status_code == 200, resp.text
    return str(resp.json()["id"])


def completion_body(training: str, **body: Any) -> dict[str, Any]:
    return {
        "model": CHAT,
        "training_files": [{"file_id": training}],
        "hyperparameters": {"learning_rate": 0.0002},
        **body,
    }


def classifier_body(training: str, **body: Any) -> dict[str, Any]:
    return {
        "model": CLASSIFIER,
        "job_type": "classifier",
        "training_files": [{"file_id": training}],
        "hyperparameters": {"epochs": 2},
        "classifier_targets": [{"name": "sentiment", "labels": ["good", "bad"]}],
        **body,
    }


async def create_job(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    resp = await client.post("/v1/fine_tuning/jobs", json=body)
    assert resp.status_code == 200, resp.text
    job: dict[str, Any] = resp.json()
    return job


async def queue_jobs(app: FastAPI) -> list[Job]:
    db: Database = app.state.services.db
    async with db.transaction() as work:
        found = await work.session.execute(sa.select(Job).where(Job.kind == TRAIN_KIND))
        return list(found.scalars())


def statuses(job: dict[str, Any]) -> list[str]:
    return [event["data"]["status"] for event in job["events"]]


async def raw_file(app: FastAPI, client: httpx.AsyncClient, content: bytes) -> str:
    """A fine-tune file holding `content` as it is: uploads refuse what is not JSONL, so the
    blob of a valid upload is rewritten behind the API's back."""
    file_id = await data_file(client, [chat_example("q", "a")])
    db: Database = app.state.services.db
    async with db.transaction() as work:
        row = await work.session.get(StoredFile, file_id)
        assert row is not None
        key = row.blob_key

    async def chunks() -> AsyncIterator[bytes]:
        yield content

    await app.state.services.blobs.put(key, chunks())
    return file_id
