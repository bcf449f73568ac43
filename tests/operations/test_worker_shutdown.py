"""`maestrale worker` told to stop (issue 21): on SIGTERM it claims nothing more and lets its
running job finish within `worker_grace_seconds`, then exits; a second SIGTERM stops it at once
(an orchestrator's second word, or Ctrl-C twice), the job's lease left to expire so that
another worker takes it over."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from maestrale.core.db import Database
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.tables import Job
from tests.faults.probe_jobs import KIND
from tests.support.databases import copy_sqlite

ROOT = Path(__file__).resolve().parents[2]


def start_worker(database_url: str, tmp_path: Path, grace: float) -> subprocess.Popen[bytes]:
    path = [str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in path if p),
        "MAESTRALE_JOB_POLL_SECONDS": "0.2",
        "MAESTRALE_WORKER_GRACE_SECONDS": str(grace),
    }
    args = ["--database-url", database_url, "--data-dir", str(tmp_path / "data")]
    args += ["--import", "tests.faults.probe_jobs"]
    log = open(tmp_path / f"worker-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "maestrale", "worker", *args],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    finally:
        log.close()  # the child has its own copy


async def enqueue(db: Database, record: Path, seconds: float) -> str:
    async with db.transaction() as work:
        payload = {"file": str(record), "seconds": seconds}
        return (await JobQueue(db).enqueue(work.session, KIND, payload)).id


async def status(db: Database, job_id: str) -> str:
    async with db.sessionmaker() as session:
        job = await session.get(Job, job_id)
        assert job is not None
        return job.status


async def started(record: Path, job_id: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while f"start {job_id}" not in (record.read_text() if record.exists() else ""):
        assert time.monotonic() < deadline, "the worker did not start the job"
        await asyncio.sleep(0.1)


async def wait(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    try:
        return await asyncio.to_thread(proc.wait, timeout)
    except subprocess.TimeoutExpired:
        return None


async def test_sigterm_lets_the_job_finish_and_a_second_one_stops_at_once(
    sqlite_template: Path, tmp_path: Path
) -> None:
    url = copy_sqlite(sqlite_template, tmp_path)
    db, record = Database(url), tmp_path / "record.txt"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        # One SIGTERM: the running job (2 s) finishes, well within the grace.
        short = await enqueue(db, record, seconds=2)
        procs.append(worker := start_worker(url, tmp_path, grace=30))
        await started(record, short)
        # The worker of the second part starts meanwhile (the only job is the first's, leased).
        procs.append(second := start_worker(url, tmp_path, grace=30))
        worker.send_signal(signal.SIGTERM)
        assert await wait(worker, 30) == 0
        assert await status(db, short) == "succeeded"
        assert f"done {short}" in record.read_text()

        # Two: the worker does not wait for a long job (its grace is 30 s).
        long = await enqueue(db, record, seconds=120)
        worker = second
        await started(record, long)
        worker.send_signal(signal.SIGTERM)
        await asyncio.sleep(0.5)
        assert worker.poll() is None  # still in its grace
        worker.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        assert await wait(worker, 20) is not None, "the second SIGTERM did not stop the worker"
        assert time.monotonic() - stopped < 15
        assert await status(db, long) != "succeeded"
        assert f"done {long}" not in record.read_text()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        await db.dispose()
