"""SQL of the vector tables, one per embedding dimension, one class per extension: sqlite-vec's
`vec0` on SQLite (`Vec0Tables`), pgvector's `vector` with an HNSW index (cosine) on Postgres
(`PgvectorTables`). Nearest-neighbour queries are scoped to the libraries the repository is
built for; rows are written and removed by chunk id (ids the chunk repository gave).

The vec0 tables hold each vector quantized to int8 (`int8_codes`): a scan reads 384 bytes a
vector at 384 dimensions instead of 1,536, and `vectors` re-scores the candidates it finds
with their float32 vectors. Databases written before held float vec0 tables named
`<prefix><dim>`: `retire_float_tables` drops them and sends their chunks back through the
backfill, which fills the int8 tables.

`vectors` holds the rules: when a table is created, which chunks enter it, and what a search
keeps of its answer. `installed_pgvector` is the extension's probe on a connection.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, text, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from maestrale.libraries.index.tables import CHUNKS, VECTOR_TABLE_PREFIX, LibraryChunk

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


def int8_table(dimension: int) -> str:
    """The name of the vec0 table of `dimension`'s int8 codes (SQLite)."""
    return f"{vector_table(dimension)}_i8"


def int8_codes(vectors_: NDArray[np.float32]) -> NDArray[np.int8]:
    """Unit vectors as int8, on one scale for the table's dimension: a value of a unit vector
    of d dimensions is about N(0, 1/d), so +-6 standard deviations (at most 1) span +-127.
    The same scale on both sides keeps the Euclidean order up to rounding and the rare clip."""
    import numpy as np

    scale = 127.0 / min(1.0, 6.0 / float(np.sqrt(vectors_.shape[-1])))
    codes: NDArray[np.int8] = np.clip(np.rint(vectors_ * scale), -127, 127).astype(np.int8)
    return codes


# A float vec0 table of the format before the int8 tables (not its shadow tables).
_FLOAT_TABLE = re.compile(re.escape(VECTOR_TABLE_PREFIX) + r"(\d+)")


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
    """The vec0 tables of int8 codes on SQLite (Euclidean distance: on unit vectors it orders
    as the cosine does)."""

    def __init__(self, session: AsyncSession, library_ids: Iterable[str]) -> None:
        self.session = session
        self.library_ids = list(dict.fromkeys(library_ids))

    async def exists(self, dimension: int) -> bool:
        query = text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name")
        found = await self.session.execute(query, {"name": int8_table(dimension)})
        return found.first() is not None

    async def create(self, dimension: int) -> None:
        """Create the table of `dimension` if it does not exist yet (the float tables of the
        format before retired first: no chunk is then marked as in both)."""
        await self.retire_float_tables()
        await self.session.execute(
            text(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {int8_table(dimension)} USING vec0("
                "chunk_id INTEGER PRIMARY KEY, library_id TEXT PARTITION KEY, "
                f"model TEXT PARTITION KEY, embedding INT8[{dimension}], "
                f"chunk_size={VEC0_CHUNK_SIZE})"
            )
        )

    async def retire_float_tables(self) -> None:
        """Drop the float vec0 tables of the format before, their chunks marked not indexed
        (the backfill puts them in the int8 tables, a library at a time, as it is searched)."""
        names = await self.session.execute(
            text("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE :prefix"),
            {"prefix": VECTOR_TABLE_PREFIX + "%"},
        )
        for (name,) in names.all():
            matched = _FLOAT_TABLE.fullmatch(str(name))
            if matched is None:
                continue
            await self.session.execute(
                update(LibraryChunk)
                .where(LibraryChunk.dimension == int(matched.group(1)))
                .values(vector_indexed=False)
                .execution_options(synchronize_session=False)
            )
            await self.session.execute(
                text(f"DROP TABLE IF EXISTS {vector_table(int(matched.group(1)))}")
            )

    async def add(self, dimension: int, rows: Sequence[tuple[int, str, str, bytes]]) -> None:
        """Put `(chunk_id, library_id, model, float32 bytes)` rows in the table of `dimension`."""
        import numpy as np

        statement = text(
            f"INSERT INTO {int8_table(dimension)} (chunk_id, library_id, model, embedding) "
            "VALUES (:id, :library_id, :model, vec_int8(:embedding))"
        )
        for start in range(0, len(rows), BATCH):
            batch = rows[start : start + BATCH]
            matrix = np.frombuffer(b"".join(row[3] for row in batch), dtype=np.float32)
            codes = int8_codes(matrix.reshape(len(batch), dimension))
            params: list[dict[str, Any]] = [
                {"id": i, "library_id": lib, "model": model, "embedding": codes[j].tobytes()}
                for j, (i, lib, model, _) in enumerate(batch)
            ]
            await self.session.execute(statement, params)

    async def remove(self, dimension: int, ids: Sequence[int]) -> None:
        """Take chunks out of the table of `dimension`."""
        statement = text(f"DELETE FROM {int8_table(dimension)} WHERE chunk_id = :id")
        # One point delete per row: vec0 plans `chunk_id IN (...)` as a full scan.
        for start in range(0, len(ids), BATCH):
            await self.session.execute(statement, [{"id": i} for i in ids[start : start + BATCH]])

    async def nearest(self, model: str, query: NDArray[np.float32], k: int) -> list[int]:
        """The ids of the `k` chunks of each library (not merged) whose int8 codes are nearest
        to the query's."""
        # The partition key takes only `=`: one query per library, each over its own vectors.
        knn = text(
            f"SELECT chunk_id FROM {int8_table(int(query.shape[0]))} "
            "WHERE embedding MATCH vec_int8(:query) AND k = :k "
            "AND library_id = :library_id AND model = :model"
        )
        blob = int8_codes(query).tobytes()
        found: list[int] = []
        for library_id in self.library_ids:
            params = {"query": blob, "k": k, "library_id": library_id, "model": model}
            found.extend(int(chunk_id) for (chunk_id,) in await self.session.execute(knn, params))
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
        self, model: str, query: NDArray[np.float32], n: int, ef: int, *, iterative_scan: bool
    ) -> list[tuple[float, int]]:
        """`(distance, chunk_id)` of the `n` nearest chunks of the libraries, nearest first,
        an HNSW search keeping `ef` candidates. `iterative_scan` (pgvector 0.8+) keeps walking
        the graph while the library filter drops what it finds."""
        if iterative_scan:
            await self.session.execute(
                text("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
            )
        await self.session.execute(
            text("SELECT set_config('hnsw.ef_search', :ef, true)"),
            {"ef": str(int(ef))},
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
