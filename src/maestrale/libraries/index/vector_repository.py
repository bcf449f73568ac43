"""SQL of the vector tables, one per embedding dimension, one class per extension: sqlite-vec's
`vec0` on SQLite (`Vec0Tables`), pgvector's `vector` with an HNSW index (cosine) on Postgres
(`PgvectorTables`). Nearest-neighbour queries are scoped to the libraries the repository is
built for; rows are written and removed by chunk id (ids the chunk repository gave).

`vectors` holds the rules: when a table is created, which chunks enter it, and what a search
keeps of its answer. `installed_pgvector` is the extension's probe on a connection.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from maestrale.libraries.index.tables import CHUNKS, VECTOR_TABLE_PREFIX

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# Rows of a vec0 table are stored in blocks of this many vectors per partition (a library and
# a model), allocated whole: sqlite-vec's default, 1024, costs 1.5 MB for a library of one
# chunk at 384 dimensions; 256 costs a quarter of that and scans as fast (bench/libraries).
VEC0_CHUNK_SIZE = 256
# Rows written per statement.
BATCH = 500

# Enable pgvector where the server has it. Inside a block with an exception handler (a
# subtransaction), so that a missing privilege does not abort the caller's transaction.
_ENABLE_PGVECTOR = """
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')
       AND NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
        CREATE EXTENSION IF NOT EXISTS vector;
    END IF;
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'pgvector could not be enabled: %', SQLERRM;
END
$$
"""


def vector_table(dimension: int) -> str:
    """The name of the vector table of `dimension` (an int: it is spelt into DDL)."""
    if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1:
        raise ValueError(f"bad vector dimension {dimension!r}")
    return f"{VECTOR_TABLE_PREFIX}{dimension}"


async def installed_pgvector(conn: AsyncConnection) -> str:
    """pgvector's version in the connection's database, enabling it first where the server
    has it and the database does not yet; "" when it cannot be had."""
    query = text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    version = (await conn.execute(query)).scalar_one_or_none()
    if version is None:
        await conn.execute(text(_ENABLE_PGVECTOR))
        version = (await conn.execute(query)).scalar_one_or_none()
    return str(version or "")


class Vec0Tables:
    """The vec0 tables on SQLite (Euclidean distance: on unit vectors it orders as the cosine
    does, and vec0 computes it faster)."""

    def __init__(self, session: AsyncSession, library_ids: Iterable[str]) -> None:
        self.session = session
        self.library_ids = list(dict.fromkeys(library_ids))

    async def exists(self, dimension: int) -> bool:
        query = text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name")
        found = await self.session.execute(query, {"name": vector_table(dimension)})
        return found.first() is not None

    async def create(self, dimension: int) -> None:
        """Create the table of `dimension` if it does not exist yet."""
        await self.session.execute(
            text(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {vector_table(dimension)} USING vec0("
                "chunk_id INTEGER PRIMARY KEY, library_id TEXT PARTITION KEY, "
                f"model TEXT PARTITION KEY, embedding FLOAT[{dimension}], "
                f"chunk_size={VEC0_CHUNK_SIZE})"
            )
        )

    async def add(self, dimension: int, rows: Sequence[tuple[int, str, str, bytes]]) -> None:
        """Put `(chunk_id, library_id, model, float32 bytes)` rows in the table of `dimension`."""
        statement = text(
            f"INSERT INTO {vector_table(dimension)} (chunk_id, library_id, model, embedding) "
            "VALUES (:id, :library_id, :model, :embedding)"
        )
        params: list[dict[str, Any]] = [
            {"id": i, "library_id": lib, "model": model, "embedding": blob}
            for i, lib, model, blob in rows
        ]
        for start in range(0, len(params), BATCH):
            await self.session.execute(statement, params[start : start + BATCH])

    async def remove(self, dimension: int, ids: Sequence[int]) -> None:
        """Take chunks out of the table of `dimension`."""
        statement = text(f"DELETE FROM {vector_table(dimension)} WHERE chunk_id = :id")
        # One point delete per row: vec0 plans `chunk_id IN (...)` as a full scan.
        for start in range(0, len(ids), BATCH):
            await self.session.execute(statement, [{"id": i} for i in ids[start : start + BATCH]])

    async def nearest(
        self, model: str, query: NDArray[np.float32], k: int
    ) -> list[tuple[float, int]]:
        """`(distance, chunk_id)` of the `k` nearest chunks of each library (not merged)."""
        # The partition key takes only `=`: one query per library, each over its own vectors.
        knn = text(
            f"SELECT chunk_id, distance FROM {vector_table(int(query.shape[0]))} "
            "WHERE embedding MATCH :query AND k = :k "
            "AND library_id = :library_id AND model = :model"
        )
        blob = query.tobytes()
        found: list[tuple[float, int]] = []
        for library_id in self.library_ids:
            params = {"query": blob, "k": k, "library_id": library_id}
            rows = await self.session.execute(knn, {**params, "model": model})
            found.extend((float(distance), int(chunk_id)) for chunk_id, distance in rows)
        return found


class PgvectorTables:
    """The pgvector tables on Postgres (their rows go with their chunk, by the foreign key's
    cascade)."""

    def __init__(self, session: AsyncSession, library_ids: Iterable[str]) -> None:
        self.session = session
        self.library_ids = list(dict.fromkeys(library_ids))

    async def exists(self, dimension: int) -> bool:
        found = await self.session.execute(
            text("SELECT to_regclass(:name)"), {"name": vector_table(dimension)}
        )
        return found.scalar() is not None

    async def create(self, dimension: int, *, hnsw: bool) -> None:
        """Create the table of `dimension` (with an HNSW index, given `hnsw`), under a lock
        that makes a second first writer of the dimension wait for the first."""
        name = vector_table(dimension)
        await self.session.execute(
            text("SELECT pg_advisory_xact_lock(hashtext('maestrale.library_chunk_vectors'))")
        )
        await self.session.execute(
            text(
                f"CREATE TABLE IF NOT EXISTS {name} ("
                f"chunk_id BIGINT PRIMARY KEY REFERENCES {CHUNKS} (id) ON DELETE CASCADE, "
                "library_id VARCHAR(36) NOT NULL, model VARCHAR(200) NOT NULL, "
                f"embedding vector({dimension}) NOT NULL)"
            )
        )
        await self.session.execute(
            text(f"CREATE INDEX IF NOT EXISTS {name}_library ON {name} (library_id, model)")
        )
        if hnsw:
            await self.session.execute(
                text(
                    f"CREATE INDEX IF NOT EXISTS {name}_hnsw ON {name} "
                    "USING hnsw (embedding vector_cosine_ops)"
                )
            )

    async def add(self, dimension: int, rows: Sequence[tuple[int, str, str, bytes]]) -> None:
        """Put `(chunk_id, library_id, model, float32 bytes)` rows in the table of `dimension`."""
        import numpy as np

        # A real[] parameter (asyncpg's binary array) cast to vector: no text formatting.
        statement = text(
            f"INSERT INTO {vector_table(dimension)} (chunk_id, library_id, model, embedding) "
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
            await self.session.execute(statement, params[start : start + BATCH])

    async def nearest(
        self, model: str, query: NDArray[np.float32], n: int, *, iterative_scan: bool
    ) -> list[tuple[float, int]]:
        """`(distance, chunk_id)` of the `n` nearest chunks of the libraries, nearest first.
        `iterative_scan` (pgvector 0.8+) keeps walking the HNSW graph while the library filter
        drops what it finds."""
        if iterative_scan:
            await self.session.execute(
                text("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
            )
        await self.session.execute(
            text("SELECT set_config('hnsw.ef_search', :ef, true)"),
            {"ef": str(max(40, min(n, 1000)))},
        )
        knn = text(
            f"SELECT chunk_id, embedding <=> CAST(CAST(:query AS real[]) AS vector) AS distance "
            f"FROM {vector_table(int(query.shape[0]))} "
            "WHERE library_id IN :library_ids AND model = :model "
            "ORDER BY embedding <=> CAST(CAST(:query AS real[]) AS vector) LIMIT :n"
        ).bindparams(bindparam("library_ids", expanding=True))
        rows = await self.session.execute(
            knn,
            {"query": query.tolist(), "library_ids": self.library_ids, "model": model, "n": n},
        )
        return [(float(distance), int(chunk_id)) for chunk_id, distance in rows]
