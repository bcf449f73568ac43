"""SQL of the chunk table, scoped to some libraries by construction: every statement filters
on them, so that no search, scan or write made through one reaches another library's chunks.

The callers (`store`, `search`, `exact`, `vectors`) hold the rules: which chunks to write,
which to rank, which vectors to move into the vector tables.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.libraries.index.tables import LibraryChunk

# Ids per `IN (...)` of an update, and rows per insert: well under both drivers' parameter limits.
BATCH = 500

C = LibraryChunk


class ChunkRepository:
    """The chunk rows of `library_ids` (the libraries a caller may read or is writing)."""

    def __init__(self, session: AsyncSession, library_ids: Iterable[str]) -> None:
        self.session = session
        self.library_ids = list(dict.fromkeys(library_ids))

    def _scope(self) -> ColumnElement[bool]:
        return C.library_id.in_(self.library_ids)

    async def insert(self, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Insert chunk rows (column values, each of a library of the scope), `BATCH` per
        statement; their ids, in the order of `rows`."""
        foreign = {row["library_id"] for row in rows} - set(self.library_ids)
        if foreign:
            raise PermissionError(f"chunks of libraries outside the scope: {sorted(foreign)}")
        statement = insert(C).returning(C.id, sort_by_parameter_order=True)
        ids: list[int] = []
        for start in range(0, len(rows), BATCH):
            batch = rows[start : start + BATCH]
            ids.extend(int(i) for i in (await self.session.execute(statement, batch)).scalars())
        return ids

    async def delete(self, document_id: str | None = None) -> None:
        """Delete the chunks of the scope (of one document of it, given `document_id`)."""
        await self.session.execute(
            delete(C).where(self._where(document_id)).execution_options(synchronize_session=False)
        )

    async def indexed(self, document_id: str | None = None) -> list[tuple[int, int]]:
        """`(id, dimension)` of the chunks of the scope (or of one document) whose vector is
        in a vector table, by id."""
        found = await self.session.execute(
            select(C.id, C.dimension)
            .where(self._where(document_id), C.vector_indexed.is_(True))
            .order_by(C.id)
        )
        return [(int(chunk_id), int(dimension)) for chunk_id, dimension in found]

    def _where(self, document_id: str | None) -> ColumnElement[bool]:
        # The document's chunks: by the document's index, checked against the scope too.
        if document_id is None:
            return self._scope()
        return and_(C.document_id == document_id, self._scope())

    async def unindexed(self, max_dimension: int) -> list[tuple[int, str, str, int, bytes]]:
        """`(id, library_id, model, dimension, vector)` of the chunks written where the vector
        extension could not be loaded, up to `max_dimension` wide, by id."""
        found = await self.session.execute(
            select(C.id, C.library_id, C.model, C.dimension, C.vector)
            .where(self._scope(), C.vector_indexed.is_(False), C.dimension <= max_dimension)
            .order_by(C.id)
        )
        return [
            (int(chunk_id), str(library_id), str(model), int(dimension), bytes(vector))
            for chunk_id, library_id, model, dimension, vector in found
        ]

    async def mark_indexed(self, ids: Sequence[int]) -> None:
        """Record that these chunks' vectors are in their vector table."""
        for start in range(0, len(ids), BATCH):
            await self.session.execute(
                update(C)
                .where(C.id.in_(ids[start : start + BATCH]), self._scope())
                .values(vector_indexed=True)
                .execution_options(synchronize_session=False)
            )

    async def vectors(
        self, model: str, dimension: int, batch: int
    ) -> AsyncIterator[list[tuple[int, bytes]]]:
        """`(id, float32 bytes)` of the chunks of the scope embedded by `model` in `dimension`
        values (the bytes checked to be that many), streamed `batch` rows at a time."""
        # Core columns (no ORM rows to build), and only the vectors of the right width.
        table = C.__table__.c
        statement = (
            select(table.id, table.vector)
            .where(
                table.library_id.in_(self.library_ids),
                table.model == model,
                table.dimension == dimension,
                func.length(table.vector) == 4 * dimension,
            )
            .execution_options(yield_per=batch)
        )
        result = await self.session.stream(statement)
        async for part in result.partitions(batch):
            if part:
                yield [(int(chunk_id), bytes(vector)) for chunk_id, vector in part]

    async def vectors_of(self, ids: Sequence[int]) -> dict[int, bytes]:
        """`{id: float32 bytes}` of those of `ids` that are chunks of the scope."""
        table = C.__table__.c
        found: dict[int, bytes] = {}
        for start in range(0, len(ids), BATCH):
            rows = await self.session.execute(
                select(table.id, table.vector).where(
                    table.id.in_(ids[start : start + BATCH]), table.library_id.in_(self.library_ids)
                )
            )
            found.update((int(chunk_id), bytes(vector)) for chunk_id, vector in rows)
        return found

    async def located(self, ids: Sequence[int]) -> dict[int, tuple[str, str, int, int, int, str]]:
        """`{id: (library_id, document_id, page, start, end, text)}` of those of `ids` that are
        chunks of the scope."""
        found = await self.session.execute(
            select(
                C.id, C.library_id, C.document_id, C.page, C.start_offset, C.end_offset, C.text
            ).where(C.id.in_(ids), self._scope())
        )
        return {
            int(chunk_id): (library_id, document_id, page, start, end, text)
            for chunk_id, library_id, document_id, page, start, end, text in found
        }
