"""Processing documents for real (INGEST's pipeline with the builtin embeddings model, INDEX's
store): uploads end done with pages and tokens, their text and chunks; unreadable documents
end in error with the reason; reprocessing replaces; deleting removes chunks and blobs; the
usage shows in the admin usage's `libraries_api`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.libraries.index.tables import LibraryChunk
from tests.libraries import support_api as s
from tests.libraries.ingest import samples
from tests.support import app_fixtures

NOTES = (
    b"# Harbour notes\n\nThe northern quay opened in April.\n\n"
    b"Dredging happened twice, in March and in September.\n"
)


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


async def chunks_of(app: FastAPI, **where: str) -> list[LibraryChunk]:
    async with app.state.services.db.transaction() as work:
        found = await work.session.execute(
            sa.select(LibraryChunk)
            .filter_by(**where)
            .order_by(LibraryChunk.document_id, LibraryChunk.ordinal)
        )
        return list(found.scalars())


async def document(client: httpx.AsyncClient, library_id: str, doc_id: str) -> dict[str, Any]:
    resp = await client.get(f"/v1/libraries/{library_id}/documents/{doc_id}")
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def test_upload_is_processed_into_pages_chunks_and_text(
    app: FastAPI, client: httpx.AsyncClient, anon_client: httpx.AsyncClient
) -> None:
    library_id = await s.create_library(client)
    md = await s.uploaded(client, library_id, NOTES, "notes.md")
    pdf = await s.uploaded(client, library_id, samples.text_pdf(pages=3), "report.pdf")
    await s.run_jobs(app)

    done = await document(client, library_id, md["id"])
    assert done["process_status"] == "done" and done["processing_status"] == "Done"
    assert done["number_of_pages"] == 1
    assert done["tokens_processing_total"] > 0
    assert done["tokens_processing_main_content"] == done["tokens_processing_total"]
    assert done["last_processed_at"] is not None
    text = await client.get(f"/v1/libraries/{library_id}/documents/{md['id']}/text_content")
    assert "northern quay" in text.json()["text"]

    report = await document(client, library_id, pdf["id"])
    assert report["process_status"] == "done" and report["number_of_pages"] == 3
    assert report["mime_type"] == "application/pdf" and report["extension"] == "pdf"
    base = f"/v1/libraries/{library_id}/documents/{pdf['id']}"
    whole = (await client.get(f"{base}/text_content")).json()["text"]
    second = await client.get(f"{base}/text_content", params={"page_start": 2, "page_end": 2})
    assert "Page 2." in second.json()["text"] and "Page 3." not in second.json()["text"]
    tail = await client.get(f"{base}/text_content", params={"page_start": 3, "page_end": 99})
    assert "Page 3." in tail.json()["text"] and "Page 2." not in tail.json()["text"]
    for params in ({"page_start": 0}, {"page_start": 4}, {"page_start": 3, "page_end": 2}):
        assert (await client.get(f"{base}/text_content", params=params)).status_code == 400

    chunks = await chunks_of(app, document_id=pdf["id"])
    assert chunks and {c.page for c in chunks} == {1, 2, 3}
    assert all(c.library_id == library_id and c.model == "maestrale-embed" for c in chunks)

    link = (await client.get(f"{base}/extracted-text-signed-url")).json()
    parts = urlsplit(link)
    opened = await anon_client.get(f"{parts.path}?{parts.query}")
    assert opened.status_code == 200 and opened.text == whole
    assert opened.headers["content-type"].startswith("text/plain")
    # The link opens the text only: not the original.
    swapped = parts.path.replace("/extracted-text", "/content")
    assert (await anon_client.get(f"{swapped}?{parts.query}")).status_code == 403


async def test_unreadable_documents_end_in_error_with_a_reason(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    library_id = await s.create_library(client)
    bad = {
        "secret.pdf": samples.encrypted_pdf(),
        "noise.bin": bytes(range(256)) * 64,
        "broken.pdf": b"%PDF-1.7\n garbage that is no PDF at all",
    }
    ids = {
        name: (await s.uploaded(client, library_id, data, name))["id"] for name, data in bad.items()
    }
    await s.run_jobs(app)
    for name, doc_id in ids.items():
        status = (await client.get(f"/v1/libraries/{library_id}/documents/{doc_id}/status")).json()
        assert status["process_status"] == "error", name
        assert status["processing_status"].startswith("Error: ") and len(
            status["processing_status"]
        ) > len("Error: x"), name
        text = await client.get(f"/v1/libraries/{library_id}/documents/{doc_id}/text_content")
        assert text.status_code == 409
        assert await chunks_of(app, document_id=doc_id) == []
    # Still listed and counted: the document is there, only unread.
    library = (await client.get(f"/v1/libraries/{library_id}")).json()
    assert library["nb_documents"] == 3


async def test_reprocess_replaces_and_a_superseded_run_writes_nothing(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    library_id = await s.create_library(client, chunk_size=64)
    doc = await s.uploaded(client, library_id, samples.text_pdf(pages=2), "r.pdf")
    base = f"/v1/libraries/{library_id}/documents/{doc['id']}"
    # Reprocessed before the first run: that run finds itself superseded.
    assert (await client.post(f"{base}/reprocess")).status_code == 204
    assert (await client.get(f"{base}/status")).json()["process_status"] == "todo"
    await s.run_jobs(app)
    first = await chunks_of(app, document_id=doc["id"])
    assert first and (await document(client, library_id, doc["id"]))["process_status"] == "done"
    texts = [name for name in s.blob_files(app) if name.endswith(".json")]
    assert [Path(name).name for name in texts] == ["text-2.json"]

    assert (await client.post(f"{base}/reprocess")).status_code == 204
    await s.run_jobs(app)
    again = await chunks_of(app, document_id=doc["id"])
    assert [(c.page, c.start_offset, c.end_offset, c.text) for c in again] == [
        (c.page, c.start_offset, c.end_offset, c.text) for c in first
    ]
    texts = [Path(name).name for name in s.blob_files(app) if name.endswith(".json")]
    assert texts == ["text-3.json"]


async def test_deleting_removes_chunks_and_blobs(app: FastAPI, client: httpx.AsyncClient) -> None:
    library_id = await s.create_library(client)
    keep = await s.uploaded(client, library_id, NOTES, "keep.md")
    drop = await s.uploaded(client, library_id, NOTES + b"More.\n", "drop.md")
    other_library = await s.create_library(client, "other")
    other = await s.uploaded(client, other_library, NOTES, "other.md")
    await s.run_jobs(app)
    assert await chunks_of(app, document_id=drop["id"])
    assert (
        await client.delete(f"/v1/libraries/{library_id}/documents/{drop['id']}")
    ).status_code == 204
    assert await chunks_of(app, document_id=drop["id"]) == []
    assert await chunks_of(app, document_id=keep["id"])
    assert not [name for name in s.blob_files(app) if drop["id"] in name]

    assert (await client.delete(f"/v1/libraries/{library_id}")).status_code == 200
    assert await chunks_of(app, library_id=library_id) == []
    assert await chunks_of(app, document_id=other["id"])  # another library's stay
    assert all(other_library in name for name in s.blob_files(app))


async def test_processing_usage_shows_in_the_admin_usage(
    app: FastAPI, client: httpx.AsyncClient, tenant: Any
) -> None:
    library_id = await s.create_library(client)
    doc = await s.uploaded(client, library_id, samples.text_pdf(pages=2), "r.pdf")
    await s.run_jobs(app)
    processed = await document(client, library_id, doc["id"])
    await app.state.services.recorder.flush()
    async with app_fixtures.make_client(app, None) as admin:
        admin.headers["x-api-key"] = app_fixtures.ADMIN_KEY
        usage = (await admin.get("/v1/admin/usage")).json()["libraries_api"]
    pages = usage["pages"]["models"]["maestrale-embed"]["input"]
    tokens = usage["tokens"]["models"]["maestrale-embed"]
    assert sum(entry["value"] for entry in pages) == 2
    assert sum(entry["value"] for entry in tokens["input"]) == processed["tokens_processing_total"]
    assert sum(entry["value"] for entry in tokens["requests"]) == 1
    assert pages[0]["workspace_id"] == tenant.workspace_id
    assert usage["audio_seconds"] == {"models": {}}
