"""Statuses: QUEUED → RUNNING → SUCCESS | FAILED | TIMEOUT_EXCEEDED, and on cancel
CANCELLATION_REQUESTED → CANCELLED (no new line starts, lines in flight finish); deletion;
results recorded once however often a line is replayed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.batch import runner
from maestrale.batch import service as batch_service
from maestrale.batch.progress import Progress
from maestrale.batch.tables import BatchJob, BatchResult
from maestrale.core.clock import utcnow
from maestrale.core.jobs.tables import Job
from maestrale.engines.builtin import BuiltinEngine
from maestrale.engines.types import ChatRequest, ChatResult
from tests.batch.support import chat_line, create_job, input_file, jsonl_file, run_jobs
from tests.support.app_fixtures import make_client
from tests.support.app_fixtures import test_settings as settings_for

pytestmark = pytest.mark.both_databases("maestrale.batch.repository")

REQUEST = {"custom_id": "a", "body": {"messages": [{"role": "user", "content": "hi"}]}}


async def _status(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    resp = await client.get(f"/v1/batch/jobs/{job_id}")
    assert resp.status_code == 200
    body: dict[str, Any] = resp.json()
    return body


async def test_cancel_a_queued_job(app: FastAPI, client: httpx.AsyncClient) -> None:
    job = await create_job(client, requests=[REQUEST])
    resp = await client.post(f"/v1/batch/jobs/{job['id']}/cancel")
    assert resp.status_code == 200
    assert resp.json()["status"] == "CANCELLED" and resp.json()["completed_at"] is not None
    await run_jobs(app)
    done = await _status(client, job["id"])
    assert done["status"] == "CANCELLED" and done["completed_requests"] == 0
    again = await client.post(f"/v1/batch/jobs/{job['id']}/cancel")
    assert again.json()["status"] == "CANCELLED"


class Gate:
    """Wraps the builtin engine's chat: counts calls started and finished, holds them until
    opened. Jobs look for cancel requests every 50 ms meanwhile."""

    def __init__(self) -> None:
        self.started = 0
        self.finished = 0
        self.open = asyncio.Event()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(runner, "FLUSH_SECONDS", 0.02)
        monkeypatch.setattr(runner, "STATUS_POLL_SECONDS", 0.05)
        original = BuiltinEngine.chat
        gate = self

        async def chat(engine: BuiltinEngine, request: ChatRequest) -> ChatResult:
            gate.started += 1
            await gate.open.wait()
            result = await original(engine, request)
            gate.finished += 1
            return result

        monkeypatch.setattr(BuiltinEngine, "chat", chat)


@pytest.fixture
async def narrow_app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    """Three lines in flight per job at most."""
    application = create_app(settings_for(database_url, tmp_path / "data", batch_concurrency=3))
    async with application.router.lifespan_context(application):
        yield application


async def eventually(check: Any, what: str, timeout: float = 10) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not await check():
        assert loop.time() < end, f"timed out waiting until {what}"
        await asyncio.sleep(0.02)


async def test_cancel_a_running_job(narrow_app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = Gate()
    gate.install(monkeypatch)
    async with make_client(narrow_app) as client:
        file_id = await input_file(client, *(chat_line(f"c{i}", f"line {i}") for i in range(20)))
        job = await create_job(client, input_files=[file_id])
        worker = asyncio.create_task(run_jobs(narrow_app))

        async def three_in_flight() -> bool:
            return gate.started == 3

        await eventually(three_in_flight, "three lines are in flight")
        assert (await _status(client, job["id"]))["status"] == "RUNNING"
        resp = await client.post(f"/v1/batch/jobs/{job['id']}/cancel")
        assert resp.json()["status"] == "CANCELLATION_REQUESTED"
        await asyncio.sleep(0.5)  # the job notices the request (it polls every 50 ms here)
        gate.open.set()
        await worker
        done = await _status(client, job["id"])
        assert done["status"] == "CANCELLED"
        # No new line started; the three in flight finished and were recorded.
        assert gate.started == gate.finished == 3
        assert (done["completed_requests"], done["succeeded_requests"]) == (3, 3)
        outputs = await jsonl_file(client, done["output_file"])
        assert [o["custom_id"] for o in outputs] == ["c0", "c1", "c2"]
        assert done["error_file"] is None


async def test_lines_in_flight_are_bounded_per_worker(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    gate.install(monkeypatch)
    settings = settings_for(
        database_url, tmp_path / "data", batch_concurrency=3, batch_max_concurrency=4
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application), make_client(application) as c:
        jobs = [await create_job(c, requests=[REQUEST] * 6) for _ in range(2)]
        worker = asyncio.create_task(run_jobs(application))  # runs both jobs at once

        async def four() -> bool:
            return gate.started == 4

        await eventually(four, "four lines are in flight")
        await asyncio.sleep(0.3)
        assert gate.started == 4  # 3 + 3 allowed per job, 4 per worker
        running = [(await _status(c, job["id"]))["status"] for job in jobs]
        assert running == ["RUNNING", "RUNNING"]
        gate.open.set()
        await worker
        assert gate.finished == 12
        for job in jobs:
            assert (await _status(c, job["id"]))["succeeded_requests"] == 6


async def test_timeout_exceeded(app: FastAPI, client: httpx.AsyncClient) -> None:
    job = await create_job(client, requests=[REQUEST], timeout_hours=1)
    async with app.state.services.db.transaction() as work:
        await work.session.execute(
            sa.update(BatchJob)
            .where(BatchJob.id == job["id"])
            .values(created_at=utcnow() - timedelta(hours=1, seconds=1))
        )
    await run_jobs(app)
    done = await _status(client, job["id"])
    assert done["status"] == "TIMEOUT_EXCEEDED"
    assert done["completed_requests"] == 0 and done["completed_at"] is not None


async def test_delete_a_finished_job_keeps_its_files(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    job = await create_job(client, requests=[REQUEST])
    await run_jobs(app)
    done = await _status(client, job["id"])
    resp = await client.delete(f"/v1/batch/jobs/{job['id']}")
    assert resp.status_code == 200
    assert resp.json() == {"id": job["id"], "object": "batch", "deleted": True}
    assert (await client.get(f"/v1/batch/jobs/{job['id']}")).status_code == 404
    assert (await client.delete(f"/v1/batch/jobs/{job['id']}")).status_code == 404
    assert (await client.get(f"/v1/files/{done['output_file']}")).status_code == 200
    async with app.state.services.db.sessionmaker() as session:
        left = await session.scalar(
            sa.select(sa.func.count()).where(BatchResult.batch_id == job["id"])
        )
    assert left == 0


async def test_delete_a_running_job_stops_it(
    narrow_app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    gate.install(monkeypatch)
    async with make_client(narrow_app) as client:
        job = await create_job(client, requests=[REQUEST] * 10)
        worker = asyncio.create_task(run_jobs(narrow_app))

        async def started() -> bool:
            return gate.started == 3

        await eventually(started, "lines are in flight")
        assert (await client.delete(f"/v1/batch/jobs/{job['id']}")).status_code == 200
        await asyncio.sleep(0.5)  # the job notices (it polls every 50 ms here)
        gate.open.set()
        await worker
        assert (await client.get("/v1/batch/jobs")).json()["total"] == 0
        assert (await client.get("/v1/files")).json()["total"] == 0
        assert gate.started == 3  # nothing started after the deletion
    async with narrow_app.state.services.db.sessionmaker() as session:
        queued = (await session.execute(sa.select(Job).where(Job.kind == "batch.run"))).scalar_one()
    assert queued.status in ("succeeded", "cancelled")


async def test_a_job_whose_worker_gave_up_reads_failed(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    job = await create_job(client, requests=[REQUEST])
    async with app.state.services.db.transaction() as work:
        await work.session.execute(
            sa.update(Job)
            .where(Job.kind == "batch.run")
            .values(status="failed", last_error="lease expired after 10 attempts")
        )
    done = await _status(client, job["id"])
    assert done["status"] == "FAILED"
    assert "lease expired after 10 attempts" in done["errors"][0]["message"]


async def test_too_many_inline_results(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch_service, "INLINE_MAX_LINES", 1)
    job = await create_job(client, requests=[REQUEST, REQUEST])
    await run_jobs(app)
    resp = await client.get(f"/v1/batch/jobs/{job['id']}", params={"inline": "true"})
    assert resp.status_code == 400 and resp.json()["code"] == "too_many_inline_results"


async def test_replayed_results_are_recorded_and_counted_once(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    job = await create_job(client, requests=[REQUEST, REQUEST])
    progress = Progress(app.state.services.db, job["id"])

    def row(line: int, ok: bool) -> dict[str, Any]:
        return {
            "batch_id": job["id"],
            "line": line,
            "ok": ok,
            "status_code": 200 if ok else 500,
            "error": None if ok else "boom",
            "record": f'{{"line": {line}}}',
        }

    assert await progress.write([row(0, True)]) == "QUEUED"
    assert await progress.write([row(0, False), row(1, False)]) == "QUEUED"
    assert await progress.write([row(1, True), row(0, True)]) == "QUEUED"
    got = await _status(client, job["id"])
    assert (got["completed_requests"], got["succeeded_requests"], got["failed_requests"]) == (
        2,
        1,
        1,
    )
    assert [line async for line, _ in progress.records(ok=True)] == [0]
    await client.delete(f"/v1/batch/jobs/{job['id']}")
    assert await progress.write([row(5, True)]) is None  # the job is gone: nothing written
