"""Summary fields: GET 404 until one exists; POST streams a summary the chat engine (the
builtin `maestrale-echo`, told by a chunk's `/respond` line what to answer) generates in a
durable job (two POSTs at once follow one job), a later POST streams the stored one with no
new job unless `force`; PUT writes one by hand; a failing model ends the stream with a
SummaryError and the row `failed`; bad languages, oversized summaries and another workspace's
index are 4xx."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from maestrale.app import create_app
from maestrale.core.jobs.tables import Job
from maestrale.core.jobs.worker import Worker
from maestrale.search_indexes.summaries.repository import SummaryRepository
from maestrale.search_indexes.summaries.service import SummaryModelMissing, summary_model
from maestrale.search_indexes.summaries.tasks import KIND
from tests.search_indexes.seeded import seeded_index
from tests.support import app_fixtures

SUMMARY = "The harbour index holds notes on the quay and the dredging of the channel."
BASE = "/v1/context/search-indexes"


@pytest.fixture
async def app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    settings = app_fixtures.test_settings(
        database_url, tmp_path / "data", search_index_summary_model="maestrale-echo"
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@contextlib.asynccontextmanager
async def worker(app: FastAPI) -> AsyncIterator[None]:
    """The process's job worker, woken by the requests that queue a job."""
    services = app.state.services
    stop = asyncio.Event()
    running = Worker(
        services.db,
        services.job_registry,
        owner="test",
        concurrency=1,
        lease_seconds=30,
        poll_seconds=0.05,
        wakeup=services.job_wakeup,
    )
    task = asyncio.create_task(running.run(stop))
    try:
        yield
    finally:
        stop.set()
        await task


async def index(app: FastAPI, name: str, first_chunk: str) -> str:
    tenant = await app_fixtures.default_tenant(app.state.services.db)
    documents = {
        "quay.md": [first_chunk, "The northern quay opened in April."],
        "bakery.md": ["Sourdough needs a starter fed every day."],
    }
    return await seeded_index(app.state.services, tenant, name, documents)


def lines(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


async def summary_jobs(app: FastAPI) -> int:
    async with app.state.services.db.transaction() as work:
        count = select(func.count()).select_from(Job).where(Job.kind == KIND)
        return int((await work.session.execute(count)).scalar_one())


@pytest.mark.both_databases("maestrale.search_indexes.summaries.repository")
async def test_a_summary_is_generated_once_then_streamed_as_stored(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await index(app, "harbour", f"/respond {SUMMARY}")
    path = f"{BASE}/harbour/summary_field/en"
    missing = await client.get(path)
    assert missing.status_code == 404 and missing.json()["code"] == "summary_not_found"

    async with worker(app):  # two at once: one generation, followed by both
        first, second = await asyncio.gather(client.post(path), client.post(path))
    generated = lines(first)
    assert lines(second) == generated
    assert generated[0] == {"status": "generated", "translated": False}
    assert "".join(part["content"] for part in generated[1:]) == SUMMARY
    assert (await client.get(path)).json() == {
        "content": SUMMARY,
        "status": "generated",
        "translated": False,
    }

    again = lines(await client.post(path, params={"force": "false"}))
    assert again == generated
    assert await summary_jobs(app) == 1
    async with worker(app):
        forced = lines(await client.post(path, params={"force": "true"}))
    assert forced == generated and await summary_jobs(app) == 2


async def test_written_by_hand_refused_and_isolated(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await index(app, "harbour", "Dredging of the channel happened twice.")
    path = f"{BASE}/harbour/summary_field/fr"
    body = {"content": "Des notes du port.", "status": "handwritten", "translated": True}
    written = await client.put(path, json=body)
    assert written.status_code == 200 and written.json() == body
    assert (await client.get(path)).json() == body
    confirmed = {**body, "status": "generated_confirmed"}
    assert (await client.put(path, json=confirmed)).json() == confirmed
    # Stored: streamed as it is, no generation.
    assert lines(await client.post(path)) == [
        {"status": "generated_confirmed", "translated": True},
        {"content": "Des notes du port."},
    ]
    assert await summary_jobs(app) == 0

    too_long = {**body, "content": "é" * (32 * 1024 + 1)}
    bad_status = {**body, "status": "generated"}
    for refused in (too_long, bad_status):
        assert (await client.put(path, json=refused)).status_code == 422
    for language in ("xx", "pt-br", "EN"):
        assert (await client.get(f"{BASE}/harbour/summary_field/{language}")).status_code == 422
    assert (await client.get(f"{BASE}/nowhere/summary_field/fr")).status_code == 404
    engines = app.state.services.engines
    assert summary_model(engines, "maestrale-echo") == "maestrale-echo"
    for unusable in ("maestrale-embed", "nowhere"):
        with pytest.raises(SummaryModelMissing):
            summary_model(engines, unusable)

    other = await app_fixtures.create_tenant(app.state.services.db)
    async with app_fixtures.make_client(app, other.key) as stranger:
        for method in ("GET", "POST", "PUT"):
            answer = await stranger.request(method, path, json=body if method == "PUT" else None)
            assert answer.status_code == 404 and answer.json()["code"] == "index_not_found"


async def test_a_failing_model_ends_the_stream_with_an_error(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    index_id = await index(app, "failing", "/fail 400")
    path = f"{BASE}/failing/summary_field/de"
    async with worker(app):
        streamed = lines(await client.post(path))
    assert streamed[0] == {"status": "generated", "translated": False}
    assert len(streamed) == 2 and "could not be generated" in streamed[1]["error"]
    async with app.state.services.db.transaction() as work:
        row = await SummaryRepository(work.session, index_id).get("de")
        assert row is not None and row.generation == "failed" and row.status is None
        job = await work.session.get(Job, row.job_id)
        assert job is not None and job.status == "failed"
    assert (await client.get(path)).status_code == 404
