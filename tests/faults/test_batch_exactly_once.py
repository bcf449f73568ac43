"""Batch jobs survive their worker (docs/architecture.md §5): a worker killed with SIGKILL in the
middle of a job is replaced and the job finishes; so does a job whose `maestrale serve` is
restarted, killed or stopped. Every custom_id then appears exactly once across the output and error
files."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import orjson
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.batch.tables import BatchJob, BatchResult
from maestrale.core.db import Database
from maestrale.core.jobs.tables import Job
from tests.support.app_fixtures import API_KEY, make_client
from tests.support.app_fixtures import test_settings as settings_for
from tests.support.live import start_server, stop_server

pytestmark = [pytest.mark.both_databases(), pytest.mark.ci_tier]

ROOT = Path(__file__).resolve().parents[2]
LINES = 160
FAST_JOBS = {
    "MAESTRALE_JOB_LEASE_SECONDS": "2",
    "MAESTRALE_JOB_POLL_SECONDS": "0.2",
    "MAESTRALE_BATCH_CONCURRENCY": "4",
    "MAESTRALE_WORKER_GRACE_SECONDS": "0.3",
}


def batch_input() -> bytes:
    """Lines of ~40 ms each; every 7th fails upstream, every 23rd is not even JSON."""
    rows = []
    for i in range(LINES):
        if i % 23 == 22:
            rows.append(b"{broken line " + str(i).encode())
            continue
        text = "/fail 400" if i % 7 == 6 else f"/sleep 40\nline {i}"
        doc = {"custom_id": f"id-{i}", "body": {"messages": [{"role": "user", "content": text}]}}
        rows.append(orjson.dumps(doc))
    return b"\n".join(rows) + b"\n"


def expected_ids() -> list[str]:
    # A line that cannot be read is named by its position.
    return sorted(str(i) if i % 23 == 22 else f"id-{i}" for i in range(LINES))


async def create_batch(client: httpx.AsyncClient) -> str:
    files = {"file": ("requests.jsonl", batch_input(), "application/octet-stream")}
    up = await client.post("/v1/files", data={"purpose": "batch"}, files=files)
    assert up.status_code == 200, up.text
    body = {"endpoint": "/v1/chat/completions", "model": "maestrale-echo"}
    created = await client.post("/v1/batch/jobs", json={**body, "input_files": [up.json()["id"]]})
    assert created.status_code == 200, created.text
    return str(created.json()["id"])


async def check_exactly_once(client: httpx.AsyncClient, db: Database, batch_id: str) -> None:
    job = (await client.get(f"/v1/batch/jobs/{batch_id}")).json()
    assert job["status"] == "SUCCESS", job
    assert job["completed_requests"] == job["total_requests"] == LINES
    assert job["succeeded_requests"] + job["failed_requests"] == LINES
    seen: list[str] = []
    for file_id in (job["output_file"], job["error_file"]):
        content = (await client.get(f"/v1/files/{file_id}/content")).content
        seen += [orjson.loads(line)["custom_id"] for line in content.splitlines()]
    assert sorted(seen) == expected_ids()  # each exactly once, across both files
    async with db.sessionmaker() as session:
        rows = await session.scalar(
            sa.select(sa.func.count()).where(BatchResult.batch_id == batch_id)
        )
    assert rows == LINES


async def counters(db: Database, batch_id: str) -> tuple[str, int]:
    async with db.sessionmaker() as session:
        row = (
            await session.execute(
                sa.select(BatchJob.status, BatchJob.completed_requests).where(
                    BatchJob.id == batch_id
                )
            )
        ).one()
    return str(row[0]), int(row[1])


async def eventually(check: Any, what: str, timeout: float = 60) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not await check():
        assert loop.time() < end, f"timed out waiting until {what}"
        await asyncio.sleep(0.05)


@pytest.fixture
async def api(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    """An API without a worker on the test's database and data dir (workers run apart)."""
    application = create_app(settings_for(database_url, tmp_path / "data"))
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
def workers(database_url: str, tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
    started: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, **FAST_JOBS, "PYTHONPATH": str(ROOT / "src")}
    for n in range(2):
        log = open(tmp_path / f"worker-{n}.log", "wb")  # noqa: SIM115 - closed below
        args = ["--database-url", database_url, "--data-dir", str(tmp_path / "data")]
        proc = subprocess.Popen(
            [sys.executable, "-m", "maestrale", "worker", *args],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        procs.append((proc, log))
        started.append(proc)
    yield started
    for proc, handle in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        handle.close()


async def test_sigkilled_worker_is_replaced_and_lines_are_written_once(
    api: FastAPI, workers: list[subprocess.Popen[bytes]]
) -> None:
    db: Database = api.state.services.db
    async with make_client(api) as client:
        batch_id = await create_batch(client)

        async def holder() -> subprocess.Popen[bytes] | None:
            async with db.sessionmaker() as session:
                owner = await session.scalar(
                    sa.select(Job.lease_owner).where(Job.kind == "batch.run")
                )
            return next((p for p in workers if owner and f":{p.pid}:" in owner), None)

        async def under_way() -> bool:
            return (await counters(db, batch_id))[1] >= 25 and await holder() is not None

        await eventually(under_way, "a worker has run a part of the job")
        victim = await holder()
        assert victim is not None
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(10)
        status, done_at_kill = await counters(db, batch_id)
        assert status == "RUNNING" and done_at_kill < LINES

        async def finished() -> bool:
            return (await counters(db, batch_id))[0] == "SUCCESS"

        await eventually(finished, "the other worker finishes the job")
        survivor = await holder()
        assert survivor is not None and survivor is not victim
        async with db.sessionmaker() as session:
            job = (
                await session.execute(sa.select(Job).where(Job.kind == "batch.run"))
            ).scalar_one()
        assert job.status == "succeeded" and job.attempts == 2
        await check_exactly_once(client, db, batch_id)


@pytest.mark.parametrize("how", ["sigkill", "sigterm"])
async def test_restarting_serve_mid_job(database_url: str, tmp_path: Path, how: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    args = ("--database-url", database_url)
    proc, url = start_server(data, *args, env=FAST_JOBS)
    db = Database(database_url)
    try:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
            batch_id = await create_batch(client)

            async def under_way() -> bool:
                return (await counters(db, batch_id))[1] >= 25

            await eventually(under_way, "the server's worker has run a part of the job")
        if how == "sigkill":
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        else:
            stop_server(proc)
            assert proc.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal
        status, done_at_stop = await counters(db, batch_id)
        assert status == "RUNNING" and done_at_stop < LINES

        proc, url = start_server(data, *args, env=FAST_JOBS)
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:

            async def finished() -> bool:
                return (await counters(db, batch_id))[0] == "SUCCESS"

            await eventually(finished, "the restarted server finishes the job")
            await check_exactly_once(client, db, batch_id)
    finally:
        stop_server(proc)
        await db.dispose()
