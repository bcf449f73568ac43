"""SQL of the search indexes and their documents, scoped to the caller's workspace (an index or a
document of another is simply not found). An index's chunks are written through the libraries'
index (`libraries.index.store`); only their attributes are touched here, by a schema update."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.repository import WorkspaceRepository
from maestrale.libraries.index.tables import LibraryChunk
from maestrale.search_indexes.tables import SearchIndex, SearchIndexDocument, SearchIndexSummary


@dataclass(frozen=True, slots=True)
class IndexFilter:
    name: str | None = None  # a substring of the name, any case
    status: str | None = None
    creator_id: str | None = None


class IndexRepository(WorkspaceRepository[SearchIndex]):
    model = SearchIndex

    async def by_name(self, name: str) -> SearchIndex | None:
        """The index `name`, whatever its status."""
        found = await self.session.execute(self.select().where(SearchIndex.name == name))
        return found.scalar_one_or_none()

    async def locked(self, index_id: str) -> SearchIndex | None:
        """The index, its row locked to the end of the transaction (Postgres): a document
        written under the lock is never left behind by the index's deletion, which first
        marks the row."""
        stmt = (
            self.select()
            .where(SearchIndex.id == index_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def page(
        self, where: IndexFilter, after: tuple[datetime, str] | None, limit: int
    ) -> list[SearchIndex]:
        """Up to `limit` indexes matching `where`, newest first, after the (created_at, id) of
        the previous page's last one. Indexes being deleted are gone already."""
        stmt = self.select().where(SearchIndex.status != "deleting")
        if where.name:
            stmt = stmt.where(SearchIndex.name.icontains(where.name, autoescape=True))
        if where.status:
            stmt = stmt.where(SearchIndex.status == where.status)
        if where.creator_id:
            stmt = stmt.where(SearchIndex.creator_id == where.creator_id)
        if after is not None:
            stamp, id_ = after
            stmt = stmt.where(
                or_(
                    SearchIndex.created_at < stamp,
                    and_(SearchIndex.created_at == stamp, SearchIndex.id < id_),
                )
            )
        stmt = stmt.order_by(SearchIndex.created_at.desc(), SearchIndex.id.desc())
        return await self.list(stmt.limit(limit))

    async def counted(self, index_id: str, documents: int, chunks: int) -> None:
        """Add to the index's counts in place (concurrent writers add, none overwrites)."""
        await self.session.execute(
            update(SearchIndex)
            .where(
                SearchIndex.id == index_id,
                SearchIndex.workspace_id == self.tenant.workspace_id,
            )
            .values(
                document_count=SearchIndex.document_count + documents,
                chunk_count=SearchIndex.chunk_count + chunks,
                modified_at=utcnow(),
            )
            .execution_options(synchronize_session=False)
        )

    async def remove(self, row: SearchIndex) -> None:
        """The index's summaries, documents and row (its chunks are the store's to remove;
        SQLite may run without cascading keys)."""
        await self.session.execute(
            delete(SearchIndexSummary).where(SearchIndexSummary.index_id == row.id)
        )
        await self.session.execute(
            delete(SearchIndexDocument).where(
                SearchIndexDocument.index_id == row.id,
                SearchIndexDocument.workspace_id == self.tenant.workspace_id,
            )
        )
        await self.delete(row)


class DocumentRepository(WorkspaceRepository[SearchIndexDocument]):
    model = SearchIndexDocument

    def __init__(self, session: AsyncSession, tenant: Tenant, index_id: str) -> None:
        super().__init__(session, tenant)
        self.index_id = index_id

    async def by_sources(self, source_ids: list[str]) -> list[SearchIndexDocument]:
        if not source_ids:
            return []
        return await self.list(
            self.select().where(
                SearchIndexDocument.index_id == self.index_id,
                SearchIndexDocument.source_id.in_(source_ids),
            )
        )

    async def batch_after(self, after: str, limit: int) -> list[SearchIndexDocument]:
        """The index's documents by id, `limit` of them after `after` ("" for the first)."""
        stmt = (
            self.select()
            .where(SearchIndexDocument.index_id == self.index_id, SearchIndexDocument.id > after)
            .order_by(SearchIndexDocument.id)
        )
        return await self.list(stmt.limit(limit))

    async def chunk_batch_after(self, after: int, limit: int) -> list[tuple[int, Any]]:
        """(id, attributes) of the index's chunks, `limit` of them after chunk `after`."""
        stmt = (
            select(LibraryChunk.id, LibraryChunk.attributes)
            .where(
                LibraryChunk.library_id == self.index_id,
                LibraryChunk.workspace_id == self.tenant.workspace_id,
                LibraryChunk.id > after,
            )
            .order_by(LibraryChunk.id)
            .limit(limit)
        )
        return [(int(id_), attrs) for id_, attrs in await self.session.execute(stmt)]

    async def set_chunk_attributes(self, chunk_id: int, attributes: dict[str, Any]) -> None:
        await self.session.execute(
            update(LibraryChunk)
            .where(LibraryChunk.id == chunk_id, LibraryChunk.library_id == self.index_id)
            .values(attributes=attributes)
            .execution_options(synchronize_session=False)
        )
