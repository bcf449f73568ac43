"""Graceful shutdown of `maestrale serve`, one process and `--workers 2` (issue 21): on SIGTERM
`/health` and `/ready` say `draining` at once while the listener stays open for the drain
(requests that still come are served); a stream started before the signal completes; new
connections are refused once the drain is over; the process exits within the grace (what is
still running then is cut) and a margin."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server

pytestmark = pytest.mark.ci_tier

AUTH = {"Authorization": f"Bearer {API_KEY}"}
MARGIN = 6.0  # seconds past the grace for the app's own shutdown, on a loaded machine


def slow_stream(milliseconds: int) -> dict[str, Any]:
    """A chat completion stream that waits before its first chunk (the builtin `/sleep`)."""
    content = f"/sleep {milliseconds}\nsee you later"
    return {
        "model": "maestrale-echo",
        "stream": True,
        "messages": [{"role": "user", "content": content}],
    }


async def read_stream(url: str, body: dict[str, Any]) -> list[str]:
    async with (
        httpx.AsyncClient(base_url=url, headers=AUTH, timeout=60) as client,
        client.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200
        return [line async for line in response.aiter_lines() if line]


async def fresh(url: str, path: str) -> httpx.Response:
    """GET on a new connection (a load balancer's health check, a new client)."""
    async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=10) as client:
        return await client.get(path)


async def until_refused(url: str, deadline: float) -> float:
    """The time (monotonic) from which a new connection is refused. A connection the kernel
    queued on a listener in the instant it closes is reset instead (with `--workers 2` each
    process closes its own SO_REUSEPORT listener): that is the refusal too."""
    while time.monotonic() < deadline:
        try:
            await fresh(url, "/health")
        except (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError):
            return time.monotonic()
        await asyncio.sleep(0.05)
    raise AssertionError("new connections were still accepted")


async def exited(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    try:
        return await asyncio.to_thread(proc.wait, timeout)
    except subprocess.TimeoutExpired:
        return None


@pytest.mark.parametrize("workers", [1, 2])
async def test_sigterm_drains_finishes_the_stream_then_refuses_and_exits(
    tmp_path: Path, workers: int
) -> None:
    grace, drain = 10.0, 1.0
    env = {
        "MAESTRALE_WORKERS": str(workers),
        "MAESTRALE_SHUTDOWN_GRACE_SECONDS": str(grace),
        "MAESTRALE_SHUTDOWN_DRAIN_SECONDS": str(drain),
    }
    proc, url = start_server(tmp_path / "data", "--no-worker", env=env)
    try:
        for _ in range(2 * workers):  # every process serves (a new connection each)
            assert (await fresh(url, "/v1/models")).status_code == 200
        stream = asyncio.create_task(read_stream(url, slow_stream(3000)))
        await asyncio.sleep(0.5)  # in flight
        assert not stream.done()
        proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()

        health = await fresh(url, "/health")
        assert (health.status_code, health.json()) == (503, {"status": "draining"})
        ready = await fresh(url, "/ready")
        assert ready.status_code == 503 and ready.json()["status"] == "draining"
        assert (await fresh(url, "/v1/models")).status_code == 200  # still served

        refused = await until_refused(url, signalled + grace)
        assert refused - signalled >= drain * 0.9
        lines = await stream
        assert lines[-1] == "data: [DONE]" and len(lines) > 3, lines
        code = await exited(proc, signalled + grace + MARGIN - time.monotonic())
        assert code is not None, "the server did not exit in time"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_what_outlasts_the_grace_is_cut_and_the_process_exits(tmp_path: Path) -> None:
    """A call still waiting for its model when the grace ends is answered 503 with Retry-After
    (never a 500), and the process does not wait for it."""
    grace = 1.0  # the call waits for a minute: any grace cuts it
    env = {
        "MAESTRALE_SHUTDOWN_GRACE_SECONDS": str(grace),
        "MAESTRALE_SHUTDOWN_DRAIN_SECONDS": "0.5",
    }
    proc, url = start_server(tmp_path / "data", "--no-worker", env=env)
    try:
        async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=60) as client:
            call = asyncio.create_task(
                client.post("/v1/chat/completions", json=slow_stream(60_000))
            )
            await asyncio.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            code = await exited(proc, grace + MARGIN)
            assert code is not None, "the server waited past its grace"
            assert time.monotonic() - signalled < grace + MARGIN
            response = await asyncio.wait_for(call, 10)
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "1"
        assert response.json()["code"] == "shutting_down"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_a_second_signal_ends_the_drain_at_once(tmp_path: Path) -> None:
    """An operator who does not want to wait for the drain (Ctrl-C after SIGTERM): the listener
    closes at once, in-flight requests still finish."""
    env = {"MAESTRALE_SHUTDOWN_DRAIN_SECONDS": "30", "MAESTRALE_SHUTDOWN_GRACE_SECONDS": "60"}
    proc, url = start_server(tmp_path / "data", "--no-worker", env=env)
    try:
        stream = asyncio.create_task(read_stream(url, slow_stream(2000)))
        await asyncio.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert (await fresh(url, "/health")).status_code == 503  # draining, for 30 s
        await asyncio.sleep(1.2)  # (a signal within a second is taken for the same one)
        proc.send_signal(signal.SIGINT)
        signalled = time.monotonic()
        assert await until_refused(url, signalled + 10) - signalled < 10
        lines = await stream
        assert lines[-1] == "data: [DONE]"
        assert await exited(proc, 20) is not None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
