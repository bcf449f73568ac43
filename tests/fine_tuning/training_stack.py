"""A server and two job workers on one SQLite database and data directory, for the tests that
really train: the API in this process on a real socket (the 1.12.4 SDK runs in subprocesses),
the workers as `maestrale worker` processes with short leases, so that one can be killed and
the other take its job over within seconds."""

from __future__ import annotations

import asyncio
import ctypes
import importlib.util
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.core.db import Database
from maestrale.core.jobs.tables import Job
from maestrale.fine_tuning import extra
from tests.support import databases
from tests.support.app_fixtures import API_KEY, create_tenant
from tests.support.app_fixtures import test_settings as make_settings
from tests.support.live import on_socket

ROOT = Path(__file__).resolve().parents[2]
FAST_JOBS = {
    "MAESTRALE_JOB_LEASE_SECONDS": "5",
    "MAESTRALE_JOB_POLL_SECONDS": "0.2",
    "MAESTRALE_WORKER_GRACE_SECONDS": "0.5",
    # One thread: torch's threads spin while they wait for each other, so two of them beside
    # another busy process (the suite's other worker) trained 4x slower than one (407 s against
    # 95 s for the killed-worker test, with a busy loop on the other core).
    "MAESTRALE_FINE_TUNING_THREADS": "1",
    "MAESTRALE_TEMPORAL_EMBEDDED": "false",
}
TRAINER = "maestrale.fine_tuning.training."


def require_training(job_type: str, *modules: str) -> None:
    """Skip where the training extra or a local model is not installed."""
    missing = extra.missing(job_type) + [
        name for name in modules if importlib.util.find_spec(name) is None
    ]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (run make)")


@dataclass
class Stack:
    api: FastAPI
    url: str
    db: Database
    data: Path
    workers: list[subprocess.Popen[bytes]]
    other_key: str

    def client(self, key: str = API_KEY) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=120
        )

    async def holder(self, queue_job_id: str) -> subprocess.Popen[bytes] | None:
        """The worker process that holds the lease of that queue job."""
        async with self.db.sessionmaker() as session:
            owner = await session.scalar(sa.select(Job.lease_owner).where(Job.id == queue_job_id))
        return next((p for p in self.workers if owner and f":{p.pid}:" in owner), None)

    async def queue_job(self, queue_job_id: str) -> Job:
        async with self.db.sessionmaker() as session:
            return (
                await session.execute(sa.select(Job).where(Job.id == queue_job_id))
            ).scalar_one()


def trainers() -> list[int]:
    """The pids of trainer processes running on this machine."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if TRAINER.encode() in command and b"spec.json" in command:
            found.append(int(entry.name))
    return found


async def eventually(
    check: Callable[[], Awaitable[Any]], what: str, timeout: float = 600, every: float = 0.5
) -> Any:
    """Poll `check` until it returns something true; that value."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        value = await check()
        if value:
            return value
        assert loop.time() < end, f"timed out waiting until {what}"
        await asyncio.sleep(every)


def _die_with_the_test() -> Callable[[], None]:
    """The workers run in sessions of their own (the test kills one's whole group): ask Linux
    to SIGKILL each when the pytest process dies, so that a killed run leaves no worker (nor,
    through its stdin, any trainer) behind. libc is loaded before the fork."""
    prctl, pr_set_pdeathsig = ctypes.CDLL(None, use_errno=True).prctl, 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGKILL)


@asynccontextmanager
async def training_stack(sqlite_template: Path, tmp_path: Path) -> AsyncIterator[Stack]:
    url = databases.copy_sqlite(sqlite_template, tmp_path)
    data = tmp_path / "data"
    api = create_app(make_settings(url, data))
    logs: list[IO[bytes]] = []
    workers: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, **FAST_JOBS, "PYTHONPATH": str(ROOT / "src")}
    async with api.router.lifespan_context(api), on_socket(api) as port:
        db: Database = api.state.services.db
        other = await create_tenant(db)
        try:
            for n in range(2):
                log = open(tmp_path / f"worker-{n}.log", "wb")  # noqa: SIM115 - closed below
                logs.append(log)
                args = ["--database-url", url, "--data-dir", str(data)]
                workers.append(
                    subprocess.Popen(  # noqa: ASYNC220 - started once, before the test runs
                        [sys.executable, "-m", "maestrale", "worker", *args],
                        cwd=ROOT,
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                        preexec_fn=_die_with_the_test(),
                    )
                )
            yield Stack(api, f"http://127.0.0.1:{port}", db, data, workers, other.key)
        finally:
            for proc in workers:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                await asyncio.to_thread(proc.wait, 10)
            for handle in logs:
                handle.close()
