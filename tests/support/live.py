"""Live `maestrale serve` processes for conformance, fault and benchmark runs."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI

from tests.support.app_fixtures import ADMIN_KEY, API_KEY


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(
    data_dir: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    port: int | None = None,
    ready_seconds: float = 60,
) -> tuple[subprocess.Popen[bytes], str]:
    port = port or free_port()
    full_env = {
        **os.environ,
        "MAESTRALE_BOOTSTRAP_API_KEY": API_KEY,
        "MAESTRALE_BOOTSTRAP_ADMIN_KEY": ADMIN_KEY,
        # One process unless a test asks for more (tests/processes runs several).
        "MAESTRALE_WORKERS": "1",
        # No private Temporal unless a test asks for one (tests/workflows does).
        "MAESTRALE_TEMPORAL_EMBEDDED": "false",
        # Stopped at once on SIGTERM: no load balancer to let notice (tests/operations sets it).
        "MAESTRALE_SHUTDOWN_DRAIN_SECONDS": "0",
        **(env or {}),
    }
    log_path = data_dir.parent / f"server-{port}.log"
    log = open(log_path, "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "maestrale",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
            *extra,
        ],
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + ready_seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {log_path.read_text()}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"server did not become healthy in {ready_seconds} s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@asynccontextmanager
async def on_socket(app: FastAPI) -> AsyncIterator[int]:
    """`app` (its lifespan already started) served by uvicorn on a real socket of this event
    loop, for tests that need what the in-process transport never does (a client that
    disconnects); yields the port."""
    number = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=number, lifespan="off", log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    try:
        yield number
    finally:
        server.should_exit = True
        await task
