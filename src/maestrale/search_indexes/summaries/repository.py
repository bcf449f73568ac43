"""SQL of the summary fields of one index (already found in the caller's workspace: the rows
are reached through it), and the sample of its chunks a generation summarises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.clock import utcnow
from maestrale.libraries.index.tables import LibraryChunk
from maestrale.search_indexes.tables import SearchIndexDocument, SearchIndexSummary

S = SearchIndexSummary
# A summary's generation states (`SearchIndexSummary.generation`).
IDLE, RUNNING, FAILED = "idle", "running", "failed"


@dataclass(frozen=True, slots=True)
class Excerpt:
    """The first chunks' texts of one document of the index, in reading order."""

    source_id: str
    texts: list[str]


class SummaryRepository:
    """The summary rows of the index `index_id`."""

    def __init__(self, session: AsyncSession, index_id: str) -> None:
        self.session = session
        self.index_id = index_id

    async def get(self, language: str, *, lock: bool = False) -> SearchIndexSummary | None:
        """The row of `language` as stored now (taken for update with `lock`, on Postgres)."""
        query = select(S).where(S.index_id == self.index_id, S.language == language)
        if lock:
            query = query.with_for_update()
        found = await self.session.execute(query.execution_options(populate_existing=True))
        return found.scalar_one_or_none()

    async def ensure(self, language: str) -> SearchIndexSummary:
        """The row of `language`, inserted empty if there is none (concurrent inserts meet on
        the primary key: one wins, none fails), taken for update."""
        dialect = postgresql if self.session.get_bind().dialect.name == "postgresql" else sqlite
        insert = dialect.insert(S).values(index_id=self.index_id, language=language)
        await self.session.execute(
            insert.on_conflict_do_nothing(index_elements=[S.index_id, S.language])
        )
        row = await self.get(language, lock=True)
        assert row is not None  # inserted above, in this transaction
        return row

    async def finish(self, language: str, job_id: str, **values: Any) -> bool:
        """Write what the generation `job_id` ended with, if it is still the running one (a
        later forced generation or a write by hand supersedes it); whether it was."""
        changed = await self.session.execute(
            update(S)
            .where(
                S.index_id == self.index_id,
                S.language == language,
                S.job_id == job_id,
                S.generation == RUNNING,
            )
            .values(**values, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        return bool(getattr(changed, "rowcount", 0))

    async def excerpts(self, *, documents: int, chunks_per_document: int) -> list[Excerpt]:
        """The first `chunks_per_document` chunks of the first `documents` documents of the
        index (by source id)."""
        docs = (
            await self.session.execute(
                select(SearchIndexDocument.id, SearchIndexDocument.source_id)
                .where(SearchIndexDocument.index_id == self.index_id)
                .order_by(SearchIndexDocument.source_id)
                .limit(documents)
            )
        ).all()
        if not docs:
            return []
        C = LibraryChunk
        texts: dict[str, list[str]] = {}
        for document_id, _ in docs:
            # A document's chunks are written in reading order: their ids follow it, and the
            # document's index (on document_id, then the row id) gives its first ones at once.
            first = await self.session.execute(
                select(C.text)
                .where(C.document_id == document_id, C.library_id == self.index_id)
                .order_by(C.id)
                .limit(chunks_per_document)
            )
            texts[document_id] = [str(text) for text in first.scalars()]
        return [Excerpt(source, texts[doc_id]) for doc_id, source in docs if texts[doc_id]]
