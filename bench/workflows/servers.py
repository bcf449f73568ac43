"""The processes of a run: the worker (`bench/workflows/worker.py`) and `maestrale serve`, started
as `tests/support/live.py` does, pointed at the bench's Temporal; the worker's registration."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import aiohttp

from bench.gateway.processes import BenchError
from bench.harness import start_process
from bench.workflows.worker import definitions
from tests.support.live import start_server

NAMESPACE = "mistral-workflows"


async def start_worker(
    address: str, namespace: str, queue: str, log: Path, api_key: str | None = None
) -> subprocess.Popen[bytes]:
    """The worker on `queue`: through the worker proxy at `address` with `api_key`, else
    straight to Temporal at `address`."""
    cmd = [sys.executable, "-m", "bench.workflows.worker", address, namespace, queue]
    proc, _ = await start_process([*cmd, *([api_key] if api_key else [])], log, "the worker")
    return proc


async def whoami(http: aiohttp.ClientSession, url: str) -> dict[str, str]:
    """What workers of the bench's workspace are told: the worker proxy and the namespace."""
    async with http.get(f"{url}/v1/workflows/workers/whoami") as response:
        if response.status != 200:
            raise BenchError(f"whoami: HTTP {response.status} {await response.text()}")
        body: dict[str, str] = await response.json()
        return body


async def start_maestrale(
    db_url: str, home: Path, address: str
) -> tuple[subprocess.Popen[bytes], str]:
    """`maestrale migrate`, then `maestrale serve --no-worker` on Temporal at `address`."""
    data = home / "data"
    data.mkdir(parents=True)
    env = {
        **os.environ,
        "MAESTRALE_TEMPORAL_ADDRESS": address,
        "MAESTRALE_TEMPORAL_NAMESPACE": NAMESPACE,
        "MAESTRALE_TEMPORAL_PROXY_PORT": "0",
        "MAESTRALE_LOG_LEVEL": "WARNING",
    }
    migrate = [sys.executable, "-m", "maestrale", "migrate", "--data-dir", str(data)]
    done = await asyncio.to_thread(
        subprocess.run, [*migrate, "--database-url", db_url], env=env, capture_output=True
    )
    if done.returncode != 0:
        raise BenchError(f"`maestrale migrate` failed: {done.stderr.decode()[-2000:]}")
    args = ("--no-worker", "--database-url", db_url)
    try:
        return await asyncio.to_thread(start_server, data, *args, env=env)
    except RuntimeError as exc:
        raise BenchError(str(exc)[-3000:]) from exc


async def register(http: aiohttp.ClientSession, url: str, queue: str) -> None:
    body = {
        "definitions": definitions(queue),
        "deployment_name": queue,
        "worker_name": "bench-worker",
        "deployment_location": {"location_type": "local"},
    }
    async with http.post(f"{url}/v1/workflows/register", json=body) as response:
        if response.status != 200:
            raise BenchError(f"register: HTTP {response.status} {await response.text()}")
