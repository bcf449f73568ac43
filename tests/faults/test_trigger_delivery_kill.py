"""A delivery answered, then its server SIGKILLed before the job ran: the restarted server starts
its work, once; the provider's retry of the same delivery is refused as a replay and starts
nothing (issue 37, Load and faults)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import httpx
import orjson
import pytest

from tests.inbound.trigger_support import echo_agent, github_headers, github_webhook, trigger_body
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server

# One database: the SQL is tested on both in tests/inbound (the repositories), the queue in
# tests/faults/test_worker_kill.py; this is about the process dying.
pytestmark = pytest.mark.ci_tier

FAST_JOBS = {"MAESTRALE_JOB_LEASE_SECONDS": "2", "MAESTRALE_JOB_POLL_SECONDS": "0.2"}


async def test_killed_after_the_answer_the_work_starts_once_after_restart(
    database_url: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    args = ("--database-url", database_url)
    # No worker in the first server: the delivery's job cannot have run when it dies.
    proc, url = start_server(data, *args, env={**FAST_JOBS, "MAESTRALE_WORKER": "false"})
    headers = {"Authorization": f"Bearer {API_KEY}"}
    try:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
            webhook = await github_webhook(client)
            agent_id = await echo_agent(client)
            body = trigger_body(webhook["id"], "agents", agent_id, "start_agent_session")
            trigger = (await client.post("/v1/triggers", json=body)).json()
        payload = orjson.dumps({"repository": {"name": "dashboard"}})
        sent_headers = github_headers(payload)
        path = httpx.URL(webhook["url"]).path
        async with httpx.AsyncClient(base_url=url, timeout=30) as provider:
            answered = await provider.post(path, content=payload, headers=sent_headers)
        assert answered.status_code == 200, answered.text
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)

        proc, url = start_server(data, *args, env=FAST_JOBS)
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
            events_path = f"/v1/triggers/{trigger['id']}/events"
            for _ in range(300):
                events = (await client.get(events_path)).json()["data"]
                if events and events[0]["status"] == "TRIGGERED":
                    break
                await asyncio.sleep(0.1)
            assert [e["status"] for e in events] == ["TRIGGERED"], events
            # The provider retries the same delivery (it never saw the answer): a replay.
            async with httpx.AsyncClient(base_url=url, timeout=30) as provider:
                retried = await provider.post(path, content=payload, headers=sent_headers)
            assert retried.status_code == 409, retried.text
            await asyncio.sleep(1)  # room for anything wrongly queued to run
            assert len((await client.get(events_path)).json()["data"]) == 1
            conversations = (await client.get("/v1/conversations")).json()
            assert [c["id"] for c in conversations] == [events[0]["url"].rsplit("/", 1)[1]]
    finally:
        stop_server(proc)
