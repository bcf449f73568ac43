"""Background responses: stored queued, run by a job of the durable queue (so by another server
process than the one that took the request: a restarted one), streamed by id from their kept
events, cancelled while queued."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from tests.batch.support import run_jobs
from tests.support.app_fixtures import make_client
from tests.support.app_fixtures import test_settings as settings_of

pytestmark = pytest.mark.both_databases("maestrale.responses.repository")


async def events(client: httpx.AsyncClient, url: str) -> list[dict[str, Any]]:
    async with client.stream("GET", url) as stream:
        assert stream.status_code == 200
        lines = [line async for line in stream.aiter_lines() if line.startswith("data: ")]
    return [json.loads(line[6:]) for line in lines]


async def test_a_background_response_outlives_its_server(
    app: FastAPI, client: httpx.AsyncClient, database_url: str, tmp_path: Path
) -> None:
    body = {"model": "maestrale-echo", "input": "later", "background": True}
    queued = (await client.post("/v1/responses", json=body)).json()
    assert queued["status"] == "queued" and queued["background"] is True and queued["output"] == []
    # Another server process on the same database (the first one restarted) runs it.
    restarted = create_app(settings_of(database_url, tmp_path / "restarted"))
    async with restarted.router.lifespan_context(restarted):
        await run_jobs(restarted)
        async with make_client(restarted) as other:
            done = (await other.get(f"/v1/responses/{queued['id']}")).json()
    assert done["status"] == "completed" and done["output_text"] == "echo: later"
    assert done["id"] == queued["id"] and done["usage"]["output_tokens"] > 0

    kept = await events(client, f"/v1/responses/{queued['id']}?stream=true")
    assert [e["sequence_number"] for e in kept] == list(range(len(kept)))
    assert kept[0]["type"] == "response.created" and kept[-1]["type"] == "response.completed"
    assert kept[-1]["response"]["output"] == done["output"]
    later = await events(client, f"/v1/responses/{queued['id']}?stream=true&starting_after=3")
    assert later == kept[4:]

    # A chain goes on from it; a plain response cannot be cancelled or streamed by id.
    chained = {"model": "maestrale-echo", "input": "next", "previous_response_id": done["id"]}
    plain = (await client.post("/v1/responses", json=chained)).json()
    assert plain["usage"]["input_tokens"] > done["usage"]["input_tokens"]
    for refused in (
        await client.post(f"/v1/responses/{plain['id']}/cancel"),
        await client.get(f"/v1/responses/{plain['id']}?stream=true"),
    ):
        assert refused.status_code == 400, refused.text


async def test_cancel_a_queued_response(app: FastAPI, client: httpx.AsyncClient) -> None:
    body = {"model": "maestrale-echo", "input": "never", "background": True}
    queued = (await client.post("/v1/responses", json=body)).json()
    cancelled = (await client.post(f"/v1/responses/{queued['id']}/cancel")).json()
    assert cancelled["status"] == "cancelled"
    await run_jobs(app)
    assert (await client.get(f"/v1/responses/{queued['id']}")).json()["status"] == "cancelled"
    assert await events(client, f"/v1/responses/{queued['id']}?stream=true") == []
    assert (await client.get("/v1/conversations")).json() == []
    # Once ended it can be deleted; while queued it could not.
    assert (await client.delete(f"/v1/responses/{queued['id']}")).status_code == 200
