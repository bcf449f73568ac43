"""The vector tables of the index, one per embedding dimension: sqlite-vec's `vec0` on SQLite,
pgvector's `vector` with an HNSW index (cosine) on Postgres.

A chunk's vector enters its table when the chunk is written on a connection that has the
extension (`vector_indexed` on the chunk); chunks written without it (a Python that cannot load
sqlite-vec, a Postgres before pgvector) are added by the first search over their library that
has it. The vec0 tables cannot be written on a connection that lacks sqlite-vec, so a chunk
deleted there leaves its vector behind: searches drop such rows when they meet them. Chunk ids
are never reused (AUTOINCREMENT, a sequence), so a leftover never stands for another chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.libraries.index.capability import (
    PGVECTOR_HNSW_MAX_DIMENSION,
    PGVECTOR_MAX_DIMENSION,
    SQLITE_VEC_MAX_DIMENSION,
    VectorBackend,
    pgvector_at_least,
)
from maestrale.libraries.index.tables import CHUNKS, VECTOR_TABLE_PREFIX, LibraryChunk

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# Rows of a vec0 table are stored in blocks of this many vectors per partition (a library and
# a model), allocated whole: sqlite-vec's default, 1024, costs 1.5 MB for a library of one
# chunk at 384 dimensions; 256 costs a quarter of that and scans as fast (bench/libraries).
VEC0_CHUNK_SIZE = 256
# vec0 answers at most this many neighbours per query.
VEC0_MAX_K = 4096
# Rows written per statement.
BATCH = 500


def vector_table(dimension: int) -> str:
    """The name of the vector table of `dimension` (an int: it is spelt into DDL)."""
    if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1:
        raise ValueError(f"bad vector dimension {dimension!r}")
    return f"{VECTOR_TABLE_PREFIX}{dimension}"


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


async def table_exists(session: AsyncSession, backend: VectorBackend, dimension: int) -> bool:
    name = vector_table(dimension)
    if backend is VectorBackend.SQLITE_VEC:
        query = text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name")
        return (await session.execute(query, {"name": name})).first() is not None
    found = await session.execute(text("SELECT to_regclass(:name)"), {"name": name})
    return found.scalar() is not None


async def ensure_table(
    session: AsyncSession, backend: VectorBackend, dimension: int, version: str
) -> None:
    """Create the vector table of `dimension` if it does not exist yet."""
    name = vector_table(dimension)
    if backend is VectorBackend.SQLITE_VEC:
        # Euclidean distance (vec0's default): on unit vectors it orders as the cosine does,
        # and vec0 computes it faster.
        await session.execute(
            text(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING vec0("
                "chunk_id INTEGER PRIMARY KEY, library_id TEXT PARTITION KEY, "
                f"model TEXT PARTITION KEY, embedding FLOAT[{dimension}], "
                f"chunk_size={VEC0_CHUNK_SIZE})"
            )
        )
        return
    if await table_exists(session, backend, dimension):
        return
    # Two first writers of a dimension would both create it: one waits for the other.
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtext('maestrale.library_chunk_vectors'))")
    )
    await session.execute(
        text(
            f"CREATE TABLE IF NOT EXISTS {name} ("
            f"chunk_id BIGINT PRIMARY KEY REFERENCES {CHUNKS} (id) ON DELETE CASCADE, "
            "library_id VARCHAR(36) NOT NULL, model VARCHAR(200) NOT NULL, "
            f"embedding vector({dimension}) NOT NULL)"
        )
    )
    await session.execute(
        text(f"CREATE INDEX IF NOT EXISTS {name}_library ON {name} (library_id, model)")
    )
    # HNSW came with pgvector 0.5 and indexes at most 2,000 dimensions; wider vectors (and
    # older pgvectors) are scanned exactly by Postgres, still without leaving the database.
    if dimension <= PGVECTOR_HNSW_MAX_DIMENSION and pgvector_at_least(version, (0, 5, 0)):
        await session.execute(
            text(
                f"CREATE INDEX IF NOT EXISTS {name}_hnsw ON {name} "
                "USING hnsw (embedding vector_cosine_ops)"
            )
        )


async def add(
    session: AsyncSession,
    backend: VectorBackend,
    dimension: int,
    rows: Sequence[tuple[int, str, str, bytes]],
) -> None:
    """Put `(chunk_id, library_id, model, float32 bytes)` rows in the table of `dimension`."""
    if not rows:
        return
    name = vector_table(dimension)
    if backend is VectorBackend.SQLITE_VEC:
        statement = text(
            f"INSERT INTO {name} (chunk_id, library_id, model, embedding) "
            "VALUES (:id, :library_id, :model, :embedding)"
        )
        params: list[dict[str, Any]] = [
            {"id": i, "library_id": lib, "model": model, "embedding": blob}
            for i, lib, model, blob in rows
        ]
    else:
        import numpy as np

        # A real[] parameter (asyncpg's binary array) cast to vector: no text formatting.
        statement = text(
            f"INSERT INTO {name} (chunk_id, library_id, model, embedding) "
            "VALUES (:id, :library_id, :model, CAST(CAST(:embedding AS real[]) AS vector)) "
            "ON CONFLICT (chunk_id) DO NOTHING"
        )
        params = [
            {
                "id": i,
                "library_id": lib,
                "model": model,
                "embedding": np.frombuffer(blob, dtype=np.float32).tolist(),
            }
            for i, lib, model, blob in rows
        ]
    for start in range(0, len(params), BATCH):
        await session.execute(statement, params[start : start + BATCH])


async def remove(session: AsyncSession, dimension: int, ids: Sequence[int]) -> None:
    """Take chunks out of the vec0 table of `dimension` (pgvector's rows go with their chunk,
    by the foreign key's cascade)."""
    if not ids:
        return
    statement = text(f"DELETE FROM {vector_table(dimension)} WHERE chunk_id = :id")
    # One point delete per row: vec0 plans `chunk_id IN (...)` as a full scan.
    for start in range(0, len(ids), BATCH):
        await session.execute(statement, [{"id": i} for i in ids[start : start + BATCH]])


async def forget(session: AsyncSession, backend: VectorBackend, where: Any) -> None:
    """Before chunks matching `where` are deleted: take their vectors out of the vec0 tables."""
    if backend is not VectorBackend.SQLITE_VEC:
        return
    C = LibraryChunk
    found = await session.execute(
        select(C.id, C.dimension).where(where, C.vector_indexed.is_(True)).order_by(C.id)
    )
    by_dimension: dict[int, list[int]] = {}
    for chunk_id, dimension in found:
        by_dimension.setdefault(int(dimension), []).append(int(chunk_id))
    for dimension, ids in by_dimension.items():
        if supports(backend, dimension) and await table_exists(session, backend, dimension):
            await remove(session, dimension, ids)


async def backfill(
    session: AsyncSession, backend: VectorBackend, version: str, library_ids: Sequence[str]
) -> None:
    """Add to the vector tables the chunks of these libraries written without the extension."""
    C = LibraryChunk
    query = (
        select(C.id, C.library_id, C.model, C.dimension, C.vector)
        .where(
            C.library_id.in_(library_ids),
            C.vector_indexed.is_(False),
            C.dimension <= max_dimension(backend),
        )
        .order_by(C.id)
    )
    pending = (await session.execute(query)).all()
    if not pending:
        return
    by_dimension: dict[int, list[tuple[int, str, str, bytes]]] = {}
    for chunk_id, library_id, model, dimension, blob in pending:
        if len(blob) == 4 * dimension:
            by_dimension.setdefault(int(dimension), []).append((chunk_id, library_id, model, blob))
    for dimension, rows in by_dimension.items():
        await ensure_table(session, backend, dimension, version)
        await add(session, backend, dimension, rows)
    ids = [row[0] for row in pending]
    for start in range(0, len(ids), BATCH):
        await session.execute(
            update(C)
            .where(C.id.in_(ids[start : start + BATCH]))
            .values(vector_indexed=True)
            .execution_options(synchronize_session=False)
        )


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
    if not await table_exists(session, backend, dimension):
        return []
    name = vector_table(dimension)
    found: list[tuple[float, int]] = []
    if backend is VectorBackend.SQLITE_VEC:
        # The partition key takes only `=`: one query per library, each over its own vectors.
        knn = text(
            f"SELECT chunk_id, distance FROM {name} WHERE embedding MATCH :query AND k = :k "
            "AND library_id = :library_id AND model = :model"
        )
        blob = query.tobytes()
        for library_id in library_ids:
            params = {"query": blob, "k": min(n, VEC0_MAX_K), "library_id": library_id}
            rows = await session.execute(knn, {**params, "model": model})
            found.extend((float(distance), int(chunk_id)) for chunk_id, distance in rows)
    else:
        if pgvector_at_least(version, (0, 8, 0)):
            # Keep walking the HNSW graph while the library filter drops what it finds.
            await session.execute(
                text("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
            )
        await session.execute(
            text("SELECT set_config('hnsw.ef_search', :ef, true)"),
            {"ef": str(max(40, min(n, 1000)))},
        )
        knn = text(
            f"SELECT chunk_id, embedding <=> CAST(CAST(:query AS real[]) AS vector) AS distance "
            f"FROM {name} WHERE library_id IN :library_ids AND model = :model "
            "ORDER BY embedding <=> CAST(CAST(:query AS real[]) AS vector) LIMIT :n"
        ).bindparams(bindparam("library_ids", expanding=True))
        rows = await session.execute(
            knn,
            {"query": query.tolist(), "library_ids": list(library_ids), "model": model, "n": n},
        )
        found.extend((float(distance), int(chunk_id)) for chunk_id, distance in rows)
    found.sort()
    ids = [chunk_id for _, chunk_id in found[:n]]
    return await _live(session, backend, dimension, ids)


async def _live(
    session: AsyncSession, backend: VectorBackend, dimension: int, ids: list[int]
) -> list[int]:
    """`ids` without the chunks deleted where sqlite-vec could not follow (dropped for good)."""
    if not ids:
        return ids
    C = LibraryChunk
    live = set((await session.execute(select(C.id).where(C.id.in_(ids)))).scalars())
    gone = [i for i in ids if i not in live]
    if gone and backend is VectorBackend.SQLITE_VEC:
        await remove(session, dimension, gone)
    return [i for i in ids if i in live]
