"""Fault tests (docs/architecture.md §10): worker processes are killed for real (SIGKILL) in the
middle of a job; another worker takes the job over once the lease expires and finishes it exactly
once."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from maestrale.core.db import Database
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.tables import Job
from tests.faults.probe_jobs import KIND

pytestmark = [pytest.mark.both_databases(), pytest.mark.ci_tier]

ROOT = Path(__file__).resolve().parents[2]
Spawn = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def spawn(database_url: str, tmp_path: Path) -> Iterator[Spawn]:
    """Start worker processes on the test's database; whatever is left is killed at the end."""
    procs: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []

    def start(*, lease: float, concurrency: int = 1) -> subprocess.Popen[bytes]:
        path = [str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in path if p),
            "MAESTRALE_JOB_LEASE_SECONDS": str(lease),
            "MAESTRALE_JOB_POLL_SECONDS": "0.2",
        }
        log = open(tmp_path / f"worker-{len(procs)}.log", "wb")  # noqa: SIM115 - closed below
        args = ["--database-url", database_url, "--data-dir", str(tmp_path / "data")]
        args += ["--import", "tests.faults.probe_jobs", "--concurrency", str(concurrency)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "maestrale", "worker", *args],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        procs.append((proc, log))
        return proc

    yield start
    for proc, log in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        log.close()


def kill9(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)


def owner_of(proc: subprocess.Popen[bytes]) -> Callable[[str], bool]:
    """Owners are `host:pid:random`; tell a process's lines by its pid."""
    return lambda owner: f":{proc.pid}:" in owner


def lines(path: Path, word: str) -> list[list[str]]:
    text = path.read_text() if path.exists() else ""
    return [line.split() for line in text.splitlines() if line.startswith(word + " ")]


async def eventually(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 30) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not await check():
        assert loop.time() < end, f"timed out waiting until {what}"
        await asyncio.sleep(0.1)


async def enqueue(db: Database, record: Path, seconds: float, n: int) -> list[str]:
    async with db.transaction() as work:
        payload = {"file": str(record), "seconds": seconds}
        return [(await JobQueue(db).enqueue(work.session, KIND, payload)).id for _ in range(n)]


async def load_jobs(db: Database, ids: list[str]) -> list[Job]:
    async with db.sessionmaker() as session:
        return [job for i in ids if (job := await session.get(Job, i)) is not None]


async def test_killed_workers_job_is_finished_once_by_another(
    database_url: str, spawn: Spawn, tmp_path: Path
) -> None:
    db, record = Database(database_url), tmp_path / "record.txt"
    try:
        [job_id] = await enqueue(db, record, seconds=3, n=1)
        a = spawn(lease=2)

        async def a_started() -> bool:
            return any(owner_of(a)(owner) for _, _, owner, _ in lines(record, "start"))

        await eventually(a_started, "worker A starts the job")
        kill9(a)
        b = spawn(lease=2)

        async def succeeded() -> bool:
            return (await load_jobs(db, [job_id]))[0].status == "succeeded"

        await eventually(succeeded, "worker B finishes the job")
        [job] = await load_jobs(db, [job_id])
        assert job.attempts == 2 and job.result is not None
        assert owner_of(b)(job.result["owner"]) and job.result["attempt"] == 2
        starts = [(j, o, int(n)) for _, j, o, n in lines(record, "start")]
        assert [(j, n) for j, o, n in starts if owner_of(a)(o)] == [(job_id, 1)]
        [(_, done_job, done_owner)] = lines(record, "done")
        assert (done_job, done_owner) == (job_id, job.result["owner"])
        b.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(b.wait, 15) == 0  # graceful stop
    finally:
        await db.dispose()


async def test_two_workers_one_killed_every_job_done_exactly_once(
    database_url: str, spawn: Spawn, tmp_path: Path
) -> None:
    db, record = Database(database_url), tmp_path / "record.txt"
    try:
        ids = await enqueue(db, record, seconds=1.5, n=6)
        a = spawn(lease=2, concurrency=2)
        b = spawn(lease=2, concurrency=2)

        async def a_started() -> bool:
            return any(owner_of(a)(owner) for _, _, owner, _ in lines(record, "start"))

        await eventually(a_started, "worker A starts a job")
        kill9(a)

        async def all_succeeded() -> bool:
            return all(job.status == "succeeded" for job in await load_jobs(db, ids))

        await eventually(all_succeeded, "every job succeeds")
        jobs = {job.id: job for job in await load_jobs(db, ids)}
        done = lines(record, "done")
        assert sorted(job_id for _, job_id, _ in done) == sorted(ids)  # once each
        for _, job_id, owner in done:
            result = jobs[job_id].result
            assert result is not None and result["owner"] == owner
        # A died seconds before it could finish anything: B took over what A had started.
        taken_over = {j for _, j, o, _ in lines(record, "start") if owner_of(a)(o)}
        assert 1 <= len(taken_over) <= 2  # never more jobs at once than its concurrency
        for job_id in taken_over:
            result = jobs[job_id].result
            assert jobs[job_id].attempts == 2 and result and owner_of(b)(result["owner"])
    finally:
        await db.dispose()
