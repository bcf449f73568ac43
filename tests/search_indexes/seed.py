"""Seeding a search index for the retrieval tests: the index and document rows and their chunks
written straight into the libraries' store (with attributes and small hand-made vectors), as
the ingestion would leave them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from maestrale.core.auth.principal import Tenant
from maestrale.core.db import Database
from maestrale.libraries.index.store import replace_document
from maestrale.search_indexes.tables import SearchIndex, SearchIndexDocument


@dataclass(frozen=True)
class Part:
    """A chunk to seed: its text, vector, offsets (after the previous part's when None) and
    attributes (the defaults when None)."""

    text: str
    vector: list[float]
    attributes: dict[str, Any] | None = None
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True)
class _Chunk:
    index: int
    start: int
    end: int
    text: str
    page: int = 1


@dataclass
class Seeded:
    index_id: str
    name: str
    documents: dict[str, str] = field(default_factory=dict)  # source id -> document id


async def seed_index(
    db: Database,
    tenant: Tenant,
    name: str,
    *,
    dimension: int = 3,
    embedding_model: str | None = None,
    chunk_fields: dict[str, Any] | None = None,
    status: str = "ready",
) -> Seeded:
    index_id = str(uuid.uuid4())
    async with db.transaction() as work:
        work.session.add(
            SearchIndex(
                id=index_id,
                organization_id=tenant.organization_id,
                workspace_id=tenant.workspace_id,
                name=name,
                creator_id="test",
                status=status,
                schema={"document_fields": {}, "chunk_fields": chunk_fields or {}},
                config={"embedding": {"type": "mistral" if embedding_model else "custom"}},
                embedding_model=embedding_model,
                dimension=dimension,
            )
        )
    return Seeded(index_id, name)


async def seed_document(
    db: Database,
    tenant: Tenant,
    index: Seeded,
    source_id: str,
    parts: list[Part],
    *,
    fields: dict[str, Any] | None = None,
    model: str | None = None,
) -> str:
    """A document of `index` with `parts` as its chunks; its internal id."""
    document_id = str(uuid.uuid4())
    chunks: list[_Chunk] = []
    attributes: list[dict[str, Any] | None] = []
    offset = 0
    for i, part in enumerate(parts):
        start = part.start if part.start is not None else offset
        end = part.end if part.end is not None else start + len(part.text)
        offset = end + 1
        chunks.append(_Chunk(i, start, end, part.text))
        attributes.append(
            part.attributes
            or {
                "locator": f"chars={start}-{end}",
                "chunk_type": "text",
                "parent_ref": None,
                "metadata": {},
                "fields": {},
            }
        )
    async with db.transaction() as work:
        work.session.add(
            SearchIndexDocument(
                id=document_id,
                organization_id=tenant.organization_id,
                workspace_id=tenant.workspace_id,
                index_id=index.index_id,
                source_id=source_id,
                fields=fields or {},
                chunk_count=len(parts),
                length=offset,
            )
        )
        await work.session.flush()
        await replace_document(
            work.session,
            organization_id=tenant.organization_id,
            workspace_id=tenant.workspace_id,
            library_id=index.index_id,
            document_id=document_id,
            chunks=chunks,
            vectors=[part.vector for part in parts],
            model=model or f"custom:{index.index_id}",
            attributes=attributes,
        )
    index.documents[source_id] = document_id
    return document_id


async def chunk_ids(db: Database, document_id: str) -> list[int]:
    """The ids of a document's chunks, in their order."""
    from sqlalchemy import select

    from maestrale.libraries.index.tables import LibraryChunk

    async with db.transaction() as work:
        found = await work.session.execute(
            select(LibraryChunk.id)
            .where(LibraryChunk.document_id == document_id)
            .order_by(LibraryChunk.ordinal)
        )
        return [int(i) for i in found.scalars()]
