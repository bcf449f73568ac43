"""Helpers of the index and document API tests: create an index over HTTP, run its jobs, and
read what the store holds of it."""

from __future__ import annotations

from typing import Any

import httpx
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.libraries.index.tables import LibraryChunk
from maestrale.search_indexes.tables import SearchIndex, SearchIndexDocument
from tests.libraries.support_api import run_jobs

BASE = "/v1/context/search-indexes"
EMBED = {"type": "mistral", "name": "maestrale-embed", "dimensions": 1024}


async def create(
    client: httpx.AsyncClient,
    name: str,
    embedding: dict[str, Any] | None = None,
    schema: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "config": {"embedding": embedding or EMBED}}
    if schema is not None:
        body["schema"] = schema
    resp = await client.post(BASE, json=body)
    assert resp.status_code == 202, resp.text
    assert resp.headers["location"] == f"{BASE}/{name}"
    created: dict[str, Any] = resp.json()
    return created


async def ready(
    app: FastAPI, client: httpx.AsyncClient, name: str, **fields: Any
) -> dict[str, Any]:
    """A new index, provisioned by its job."""
    await create(client, name, **fields)
    await run_jobs(app)
    got: dict[str, Any] = (await client.get(f"{BASE}/{name}")).json()
    assert got["status"] == "ready", got
    return got


async def ingest(client: httpx.AsyncClient, name: str, documents: list[Any]) -> dict[str, Any]:
    resp = await client.post(f"{BASE}/{name}/documents", json={"documents": documents})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def stored(app: FastAPI, index_id: str) -> tuple[Any, list[Any], list[Any]]:
    """The index's row, its documents and its chunks (by document, then ordinal)."""
    async with app.state.services.db.transaction() as work:
        session = work.session
        row = await session.get(SearchIndex, index_id)
        docs = await session.execute(
            sa.select(SearchIndexDocument)
            .where(SearchIndexDocument.index_id == index_id)
            .order_by(SearchIndexDocument.source_id)
        )
        chunks = await session.execute(
            sa.select(LibraryChunk)
            .where(LibraryChunk.library_id == index_id)
            .order_by(LibraryChunk.document_id, LibraryChunk.ordinal)
        )
        return row, list(docs.scalars()), list(chunks.scalars())


__all__ = ["BASE", "EMBED", "create", "ingest", "ready", "run_jobs", "stored"]
