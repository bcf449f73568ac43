"""The vector tables of the index, one per embedding dimension: sqlite-vec's `vec0` on SQLite,
pgvector's `vector` with an HNSW index (cosine) on Postgres (their SQL: `vector_repository`).

A chunk's vector enters its table when the chunk is written on a connection that has the
extension (`vector_indexed` on the chunk); chunks written without it (a Python that cannot load
sqlite-vec, a Postgres before pgvector) are added by the first search over their library that
has it. The vec0 tables cannot be written on a connection that lacks sqlite-vec, so a chunk
deleted there leaves its vector behind: searches drop such rows when they meet them. Chunk ids
are never reused (AUTOINCREMENT, a sequence), so a leftover never stands for another chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.libraries.index.capability import (
    PGVECTOR_HNSW_MAX_DIMENSION,
    PGVECTOR_MAX_DIMENSION,
    SQLITE_VEC_MAX_DIMENSION,
    VectorBackend,
    pgvector_at_least,
)
from maestrale.libraries.index.repository import ChunkRepository
from maestrale.libraries.index.vector_repository import PgvectorTables, Vec0Tables

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# vec0 answers at most this many neighbours per query.
VEC0_MAX_K = 4096


def supports(backend: VectorBackend, dimension: int) -> bool:
    """Whether the backend's vector tables take vectors of `dimension`."""
    if backend is VectorBackend.SQLITE_VEC:
        return 0 < dimension <= SQLITE_VEC_MAX_DIMENSION
    if backend is VectorBackend.PGVECTOR:
        return 0 < dimension <= PGVECTOR_MAX_DIMENSION
    return False


def max_dimension(backend: VectorBackend) -> int:
    if backend is VectorBackend.SQLITE_VEC:
        return SQLITE_VEC_MAX_DIMENSION
    if backend is VectorBackend.PGVECTOR:
        return PGVECTOR_MAX_DIMENSION
    return 0


def _tables(
    session: AsyncSession, backend: VectorBackend, library_ids: Sequence[str] = ()
) -> Vec0Tables | PgvectorTables:
    if backend is VectorBackend.SQLITE_VEC:
        return Vec0Tables(session, library_ids)
    return PgvectorTables(session, library_ids)


async def table_exists(session: AsyncSession, backend: VectorBackend, dimension: int) -> bool:
    return await _tables(session, backend).exists(dimension)


async def ensure_table(
    session: AsyncSession, backend: VectorBackend, dimension: int, version: str
) -> None:
    """Create the vector table of `dimension` if it does not exist yet."""
    tables = _tables(session, backend)
    if isinstance(tables, Vec0Tables):
        await tables.create(dimension)
        return
    if await tables.exists(dimension):
        return
    # HNSW came with pgvector 0.5 and indexes at most 2,000 dimensions; wider vectors (and
    # older pgvectors) are scanned exactly by Postgres, still without leaving the database.
    hnsw = dimension <= PGVECTOR_HNSW_MAX_DIMENSION and pgvector_at_least(version, (0, 5, 0))
    await tables.create(dimension, hnsw=hnsw)


async def add(
    session: AsyncSession,
    backend: VectorBackend,
    dimension: int,
    rows: Sequence[tuple[int, str, str, bytes]],
) -> None:
    """Put `(chunk_id, library_id, model, float32 bytes)` rows in the table of `dimension`."""
    if rows:
        await _tables(session, backend).add(dimension, rows)


async def forget(
    session: AsyncSession, backend: VectorBackend, chunks: ChunkRepository, document_id: str | None
) -> None:
    """Before the chunks of `chunks`' libraries (or of one document of them) are deleted: take
    their vectors out of the vec0 tables (pgvector's rows go with their chunk, by the foreign
    key's cascade)."""
    if backend is not VectorBackend.SQLITE_VEC:
        return
    by_dimension: dict[int, list[int]] = {}
    for chunk_id, dimension in await chunks.indexed(document_id):
        by_dimension.setdefault(dimension, []).append(chunk_id)
    tables = Vec0Tables(session, chunks.library_ids)
    for dimension, ids in by_dimension.items():
        if supports(backend, dimension) and await tables.exists(dimension):
            await tables.remove(dimension, ids)


async def backfill(
    session: AsyncSession, backend: VectorBackend, version: str, library_ids: Sequence[str]
) -> None:
    """Add to the vector tables the chunks of these libraries written without the extension."""
    chunks = ChunkRepository(session, library_ids)
    pending = await chunks.unindexed(max_dimension(backend))
    if not pending:
        return
    by_dimension: dict[int, list[tuple[int, str, str, bytes]]] = {}
    for chunk_id, library_id, model, dimension, blob in pending:
        if len(blob) == 4 * dimension:
            by_dimension.setdefault(dimension, []).append((chunk_id, library_id, model, blob))
    for dimension, rows in by_dimension.items():
        await ensure_table(session, backend, dimension, version)
        await add(session, backend, dimension, rows)
    await chunks.mark_indexed([row[0] for row in pending])


async def nearest(
    session: AsyncSession,
    backend: VectorBackend,
    version: str,
    *,
    library_ids: Sequence[str],
    model: str,
    query: NDArray[np.float32],
    n: int,
) -> list[int]:
    """The ids of the `n` chunks of these libraries, embedded by `model`, nearest to `query`
    (a normalised float32 vector), nearest first."""
    import numpy as np

    query = np.ascontiguousarray(query, dtype=np.float32)
    dimension = int(query.shape[0])
    tables = _tables(session, backend, library_ids)
    if not await tables.exists(dimension):
        return []
    if isinstance(tables, Vec0Tables):
        found = await tables.nearest(model, query, min(n, VEC0_MAX_K))
    else:
        iterative = pgvector_at_least(version, (0, 8, 0))
        found = await tables.nearest(model, query, n, iterative_scan=iterative)
    found.sort()
    ids = [chunk_id for _, chunk_id in found[:n]]
    return await _live(session, tables, library_ids, dimension, ids)


async def _live(
    session: AsyncSession,
    tables: Vec0Tables | PgvectorTables,
    library_ids: Sequence[str],
    dimension: int,
    ids: list[int],
) -> list[int]:
    """`ids` without the chunks deleted where sqlite-vec could not follow (dropped for good)."""
    if not ids:
        return ids
    live = await ChunkRepository(session, library_ids).live(ids)
    gone = [i for i in ids if i not in live]
    if gone and isinstance(tables, Vec0Tables):
        await tables.remove(dimension, gone)
    return [i for i in ids if i in live]
