"""Processing that goes wrong never leaves a document in progress for ever: failures worth a
retry are retried, then end in error; a job that died without a word reads as an error; a
document deleted while it was processed keeps nothing of the run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.core.errors import ServiceUnavailable
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.tables import Job
from maestrale.core.jobs.worker import Worker
from maestrale.libraries.documents.service import remove_document
from maestrale.libraries.index.tables import LibraryChunk
from maestrale.libraries.ingest import pipeline
from maestrale.libraries.queueing import PROCESS_ATTEMPTS
from maestrale.libraries.tables import LibraryDocument
from tests.libraries import support_api as s
from tests.support import app_fixtures

NOTES = b"The breakwater repair takes three more years.\n"


@pytest.fixture
async def app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    settings = app_fixtures.test_settings(
        database_url, tmp_path / "data", library_embedding_model="maestrale-embed"
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with app_fixtures.make_client(app) as c:
        yield c


async def run_fast_retries(app: FastAPI) -> None:
    """Run the jobs with retries due at once."""
    services = app.state.services
    queue = JobQueue(services.db, backoff_base=0.01, backoff_cap=0.05)
    worker = Worker(
        services.db,
        services.job_registry,
        owner="test",
        concurrency=1,
        lease_seconds=30,
        poll_seconds=0.02,
        queue=queue,
    )
    await worker.run_until_idle(60)


async def status(client: httpx.AsyncClient, library_id: str, doc_id: str) -> dict[str, Any]:
    resp = await client.get(f"/v1/libraries/{library_id}/documents/{doc_id}/status")
    body: dict[str, Any] = resp.json()
    return body


async def test_a_failure_worth_retrying_ends_in_error_after_the_last_attempt(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = 0

    async def down(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        raise ServiceUnavailable("the embeddings server is down")

    monkeypatch.setattr(pipeline, "ingest", down)
    library_id = await s.create_library(client)
    doc = await s.uploaded(client, library_id, NOTES)
    await run_fast_retries(app)
    assert calls == PROCESS_ATTEMPTS
    state = await status(client, library_id, doc["id"])
    assert state["process_status"] == "error"
    assert "the embeddings server is down" in state["processing_status"]
    async with app.state.services.db.transaction() as work:
        job = (
            await work.session.execute(sa.select(Job).where(Job.kind == "libraries.process"))
        ).scalar_one()
        assert job.status == "failed"

    # Once the server is back, reprocessing works.
    monkeypatch.undo()
    await client.post(f"/v1/libraries/{library_id}/documents/{doc['id']}/reprocess")
    await s.run_jobs(app)
    assert (await status(client, library_id, doc["id"]))["process_status"] == "done"


async def test_a_job_that_died_reads_as_an_error(app: FastAPI, client: httpx.AsyncClient) -> None:
    library_id = await s.create_library(client)
    doc = await s.uploaded(client, library_id, NOTES)
    # Its worker was killed on the last attempt: the lease expired, the queue failed the job.
    async with app.state.services.db.transaction() as work:
        await work.session.execute(
            sa.update(LibraryDocument)
            .where(LibraryDocument.id == doc["id"])
            .values(process_status="in_progress", processing_status="InProgress")
        )
        await work.session.execute(
            sa.update(Job)
            .where(Job.kind == "libraries.process")
            .values(status="failed", last_error="lease expired after 5 attempts")
        )
    state = await status(client, library_id, doc["id"])
    assert state["process_status"] == "error"
    assert "lease expired after 5 attempts" in state["processing_status"]
    listed = (await client.get(f"/v1/libraries/{library_id}/documents")).json()["data"]
    assert listed[0]["process_status"] == "error"


async def test_a_document_deleted_while_processed_keeps_nothing(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pipeline.ingest
    db = app.state.services.db

    async def deleted_meanwhile(services: Any, **kwargs: Any) -> Any:
        done = await real(services, **kwargs)
        async with db.transaction() as work:  # another request deletes it now
            row = (await work.session.execute(sa.select(LibraryDocument))).scalar_one()
            keys = await remove_document(work.session, row)
            assert keys is not None
        for key in keys:  # and then its blobs (the text read during the upload among them)
            await app.state.services.blobs.delete(key)
        return done

    monkeypatch.setattr(pipeline, "ingest", deleted_meanwhile)
    library_id = await s.create_library(client)
    await s.uploaded(client, library_id, NOTES)
    await s.run_jobs(app)
    async with db.transaction() as work:
        assert (
            await work.session.execute(sa.select(sa.func.count()).select_from(LibraryChunk))
        ).scalar_one() == 0
    assert [name for name in s.blob_files(app) if name.endswith(".json")] == []
    library = (await client.get(f"/v1/libraries/{library_id}")).json()
    assert library["nb_documents"] == 0 and library["total_size"] == 0
