"""Helpers of the batch tests: input files, jobs, an in-process worker, reading result files."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
from fastapi import FastAPI

from maestrale.core.jobs.worker import Worker
from tests.files.support import upload

ECHO = "maestrale-echo"


def chat_line(custom_id: str, text: str, **body: Any) -> str:
    doc = {
        "custom_id": custom_id,
        "body": {"messages": [{"role": "user", "content": text}], **body},
    }
    return orjson.dumps(doc).decode()


async def input_file(client: httpx.AsyncClient, *lines: str, name: str = "in.jsonl") -> str:
    resp = await upload(
        client, "".join(line + "\n" for line in lines).encode(), name, purpose="batch"
    )
    assert resp.status_code == 200, resp.text
    return str(resp.json()["id"])


async def create_job(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    payload = {"endpoint": "/v1/chat/completions", "model": ECHO, **body}
    resp = await client.post("/v1/batch/jobs", json=payload)
    assert resp.status_code == 200, resp.text
    job: dict[str, Any] = resp.json()
    return job


async def run_jobs(app: FastAPI, timeout: float = 30, *, concurrency: int = 2) -> None:
    """Run every due job in this process until none is left (a job due later stays queued)."""
    worker = Worker(
        app.state.services.db,
        app.state.services.job_registry,
        owner="test-worker",
        concurrency=concurrency,
        lease_seconds=10,
        poll_seconds=0.05,
    )
    await worker.run_until_idle(timeout)


async def jsonl_file(client: httpx.AsyncClient, file_id: str | None) -> list[dict[str, Any]]:
    assert file_id is not None
    resp = await client.get(f"/v1/files/{file_id}/content")
    assert resp.status_code == 200
    return [orjson.loads(line) for line in resp.content.splitlines()]
