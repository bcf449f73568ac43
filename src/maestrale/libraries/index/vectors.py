"""The vector tables of the index, one per embedding dimension: sqlite-vec's `vec0` on SQLite,
pgvector's `vector` with an HNSW index (cosine) on Postgres (their SQL: `vector_repository`).

Both are approximate. vec0 scans every vector of the libraries searched, so its tables hold
int8 codes (4 times smaller than float32): the nearest `oversampled(n)` by their codes are
re-scored with their stored float32 vectors and the best `n` kept. HNSW walks a graph,
as widely as `ef_search(n)` says. bench/libraries/scale.py and the tests measure the recall of
both against the exact scan (>= 0.95 at 10).

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
# Candidates taken by int8 codes per neighbour asked for, and at least. On clustered 384-dim
# vectors (bench/libraries/scale.py), 100 int8 candidates re-scored give a recall@10 of 1.0;
# sign bits (8 times smaller again) need 1,000 for 0.95, and vec0's cost grows with the
# candidates asked for (200,000 vectors: bits at k=1,000 take 460 ms, int8 at k=100 130 ms).
OVERSAMPLE = 2
MIN_CANDIDATES = 100
# HNSW's candidate list per neighbour asked for, and its bounds (pgvector's default is 40).
# 1M clustered 384-dim vectors, a search of limit 10 (50 neighbours asked): ef 100 gives a
# recall@10 of 0.87, ef 400 0.95, for 1.3 ms more at p50 (bench/libraries/scale.py).
EF_PER_NEIGHBOUR = 8
MIN_EF_SEARCH = 400
MAX_EF_SEARCH = 1000


def oversampled(n: int) -> int:
    """How many candidates the int8 codes give for `n` neighbours."""
    return min(max(OVERSAMPLE * n, MIN_CANDIDATES), VEC0_MAX_K)


def ef_search(n: int) -> int:
    """HNSW's `ef_search` for `n` neighbours."""
    return min(max(EF_PER_NEIGHBOUR * n, MIN_EF_SEARCH), MAX_EF_SEARCH)


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
    """Add to the vector tables the chunks of these libraries written without the extension
    (or in the float vec0 tables of the format before, which are retired first)."""
    if backend is VectorBackend.SQLITE_VEC:
        await Vec0Tables(session, ()).retire_float_tables()
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
    if isinstance(tables, PgvectorTables):
        iterative = pgvector_at_least(version, (0, 8, 0))
        found = await tables.nearest(model, query, n, ef_search(n), iterative_scan=iterative)
        # The relaxed order of the iterative scan: sorted here. (Rows go with their chunk.)
        found.sort()
        return [chunk_id for _, chunk_id in found[:n]]
    candidates = await tables.nearest(model, query, oversampled(n))
    return await _rescored(session, tables, library_ids, query, candidates, n)


async def _rescored(
    session: AsyncSession,
    tables: Vec0Tables,
    library_ids: Sequence[str],
    query: NDArray[np.float32],
    candidates: list[int],
    n: int,
) -> list[int]:
    """The `n` of `candidates` nearest to `query` by their float32 vectors, nearest first
    (equal scores: the older chunk first). Candidates that are no chunk of the libraries any
    more (deleted where sqlite-vec could not follow) are dropped from the table for good."""
    import numpy as np

    if not candidates:
        return []
    dimension = int(query.shape[0])
    stored = await ChunkRepository(session, library_ids).vectors_of(candidates)
    gone = [i for i in candidates if i not in stored]
    if gone:
        await tables.remove(dimension, gone)
    width = 4 * dimension
    ids = np.array([i for i, blob in stored.items() if len(blob) == width], dtype=np.int64)
    if not len(ids):
        return []
    matrix = np.frombuffer(b"".join(stored[int(i)] for i in ids), dtype=np.float32)
    scores = matrix.reshape(len(ids), dimension) @ query
    order = np.lexsort((ids, -scores))[:n]
    return [int(i) for i in ids[order]]
