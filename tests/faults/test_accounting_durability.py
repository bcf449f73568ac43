"""Accounting is off the hot path yet durable: a burst of calls is fully recorded when the server
stops (SIGTERM flushes the buffer) and within a second even when it is killed (SIGKILL)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server

pytestmark = pytest.mark.ci_tier

BURST = 60


async def _burst(url: str) -> None:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    body = {"model": "maestrale-echo", "messages": [{"role": "user", "content": "count me"}]}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
        responses = await asyncio.gather(
            *(client.post("/v1/chat/completions", json=body) for _ in range(BURST))
        )
    assert all(r.status_code == 200 for r in responses)


def _counts(data_dir: Path) -> tuple[int, int]:
    with sqlite3.connect(data_dir / "maestrale.db") as conn:
        usage = conn.execute("SELECT count(*) FROM usage_records").fetchone()[0]
        events = conn.execute("SELECT count(*) FROM chat_completion_events").fetchone()[0]
    return int(usage), int(events)


@pytest.mark.parametrize("how", ["sigterm-at-once", "sigkill-after-1s"])
async def test_a_burst_is_recorded(tmp_path: Path, how: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    proc, url = start_server(data, "--no-worker")
    try:
        await _burst(url)
        if how == "sigterm-at-once":
            stop_server(proc)
        else:
            await asyncio.sleep(1.0)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _counts(data) == (BURST, BURST)
