"""The search indexes' SQL on both backends: the list's filters (a name substring in any case,
with LIKE's wildcards taken literally) and keyset, counts added in place, a document's chunks
by batch with their attributes rewritten, an index removed with its rows, and everything
scoped to its workspace."""

from __future__ import annotations

from datetime import timedelta

import pytest

from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.core.ids import new_id
from maestrale.libraries.index.store import replace_document
from maestrale.libraries.ingest.chunking import Chunk
from maestrale.search_indexes.repository import DocumentRepository, IndexFilter, IndexRepository
from maestrale.search_indexes.tables import SearchIndex, SearchIndexDocument
from tests.support.app_fixtures import create_tenant

pytestmark = pytest.mark.both_databases("maestrale.search_indexes.repository")


def _index(name: str, age: int, status: str = "ready") -> SearchIndex:
    stamp = utcnow() - timedelta(minutes=age)
    return SearchIndex(
        id=new_id(),
        name=name,
        creator_id="me" if age % 2 else "you",
        status=status,
        schema={"document_fields": {}, "chunk_fields": {}},
        config={"embedding": {"type": "custom", "name": "c", "dimensions": 2}},
        dimension=2,
        document_count=0,
        chunk_count=0,
        created_at=stamp,
        modified_at=stamp,
    )


async def test_indexes_documents_and_chunks(db: Database) -> None:
    mine, theirs = await create_tenant(db, "mine"), await create_tenant(db, "theirs")
    async with db.transaction() as work:
        repo = IndexRepository(work.session, mine.tenant)
        rows = [_index(n, age) for age, n in enumerate(["a_1", "A%1", "b", "gone"], start=1)]
        rows[-1].status = "deleting"
        for row in rows:
            await repo.add(row)
        await IndexRepository(work.session, theirs.tenant).add(_index("a_2", 0))
        target = rows[0]

    async with db.transaction() as work:
        repo = IndexRepository(work.session, mine.tenant)
        everything = await repo.page(IndexFilter(), None, 10)
        assert [r.name for r in everything] == ["a_1", "A%1", "b"]
        after = (everything[0].created_at, everything[0].id)
        assert [r.name for r in await repo.page(IndexFilter(), after, 1)] == ["A%1"]
        assert [r.name for r in await repo.page(IndexFilter(name="a%"), None, 10)] == ["A%1"]
        assert [r.name for r in await repo.page(IndexFilter(name="A_"), None, 10)] == ["a_1"]
        assert [r.name for r in await repo.page(IndexFilter(creator_id="you"), None, 10)] == ["A%1"]
        assert await repo.page(IndexFilter(status="failed"), None, 10) == []
        assert await repo.by_name("a_2") is None  # theirs
        locked = await repo.locked(target.id)
        assert locked is not None and locked.name == "a_1"
        assert await IndexRepository(work.session, theirs.tenant).locked(target.id) is None
        await repo.counted(target.id, 1, 2)
        await repo.counted(target.id, 0, 3)
        docs = DocumentRepository(work.session, mine.tenant, target.id)
        document = SearchIndexDocument(
            id=new_id(), index_id=target.id, source_id="s", fields={}, chunk_count=2, length=3
        )
        await docs.add(document)
        await replace_document(
            work.session,
            organization_id=mine.tenant.organization_id,
            workspace_id=mine.tenant.workspace_id,
            library_id=target.id,
            document_id=document.id,
            chunks=[Chunk(0, 1, 0, 1, "x"), Chunk(1, 1, 1, 3, "yz")],
            vectors=[[1.0, 0.0], [0.0, 1.0]],
            model=f"custom:{target.id}",
            attributes=[{"fields": {}}, {"fields": {"k": 1}}],
        )

    async with db.transaction() as work:
        counted = await IndexRepository(work.session, mine.tenant).get(target.id)
        assert counted is not None and (counted.document_count, counted.chunk_count) == (1, 5)
        docs = DocumentRepository(work.session, mine.tenant, target.id)
        assert [d.source_id for d in await docs.by_sources(["s", "t"])] == ["s"]
        assert [d.source_id for d in await docs.batch_after("", 10)] == ["s"]
        batch = await docs.chunk_batch_after(0, 1)
        assert [attrs for _, attrs in batch] == [{"fields": {}}]
        rest = await docs.chunk_batch_after(batch[0][0], 10)
        assert [attrs for _, attrs in rest] == [{"fields": {"k": 1}}]
        await docs.set_chunk_attributes(rest[0][0], {"fields": {"k": 2}})
        theirs_docs = DocumentRepository(work.session, theirs.tenant, target.id)
        assert await theirs_docs.by_sources(["s"]) == []
        assert await theirs_docs.chunk_batch_after(0, 10) == []

    async with db.transaction() as work:
        docs = DocumentRepository(work.session, mine.tenant, target.id)
        assert (await docs.chunk_batch_after(0, 10))[1][1] == {"fields": {"k": 2}}
        repo = IndexRepository(work.session, mine.tenant)
        found = await repo.get(target.id)
        assert found is not None
        await repo.remove(found)
    async with db.transaction() as work:
        assert await IndexRepository(work.session, mine.tenant).get(target.id) is None
        assert await DocumentRepository(work.session, mine.tenant, target.id).list() == []
