"""sqlite-vec's int8 tables: the recall of a search against the exact scan, and the move
of a database written with the float vec0 tables of the format before."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import text

from maestrale.core.db import Database, sqlite_can_load_extensions, sqlite_vec_path
from maestrale.core.ids import new_id
from maestrale.libraries import index
from tests.libraries.index.helpers import DIM, MODEL, clustered, put, recall_at, unit

pytestmark = pytest.mark.skipif(
    not (sqlite_can_load_extensions() and sqlite_vec_path() is not None),
    reason="this Python's sqlite3 cannot load sqlite-vec",
)

CHUNKS = 3000
QUERIES = 40


async def _ranking(db: Database, library: str, vector: object, limit: int) -> list[int]:
    async with db.transaction() as work:
        hits = await index.search(
            work.session, library_ids=[library], query="", vector=vector, model=MODEL, limit=limit
        )
    return [int(hit.text) for hit in hits]


async def test_recall_at_10_against_the_exact_scan(db: Database) -> None:
    rng = np.random.default_rng(38)
    vectors = clustered(rng, CHUNKS + QUERIES, 384, clusters=30)
    corpus, queries = vectors[:CHUNKS], vectors[CHUNKS:]
    library = new_id()
    async with db.transaction() as work:
        assert await index.vector_backend(work.session) is index.VectorBackend.SQLITE_VEC
        await put(work.session, library, new_id(), [str(i) for i in range(CHUNKS)], corpus)
        await put(work.session, new_id(), new_id(), ["other"] * 50, corpus[:50])
    exact = [list(np.argsort(-(corpus @ q))[:10]) for q in queries]
    found = [await _ranking(db, library, q, 10) for q in queries]
    assert recall_at(found, exact) >= 0.95


async def test_a_database_with_float_tables_moves_to_int8_tables(db: Database) -> None:
    rng = np.random.default_rng(39)
    library = new_id()
    vectors = unit(rng, 30)
    texts = [str(i) for i in range(30)]
    async with db.transaction() as work:
        await put(work.session, library, new_id(), texts, vectors)
        # As the format before left it: the vectors in a float vec0 table, marked indexed.
        await work.session.execute(text(f"DROP TABLE library_chunk_vectors_{DIM}_i8"))
        await work.session.execute(
            text(
                f"CREATE VIRTUAL TABLE library_chunk_vectors_{DIM} USING vec0(chunk_id INTEGER "
                "PRIMARY KEY, library_id TEXT PARTITION KEY, model TEXT PARTITION KEY, "
                f"embedding FLOAT[{DIM}])"
            )
        )
        await work.session.execute(
            text(
                f"INSERT INTO library_chunk_vectors_{DIM} (chunk_id, library_id, model, "
                "embedding) SELECT id, library_id, model, vector FROM library_chunks"
            )
        )
    assert await _ranking(db, library, vectors[7], 3) == list(
        np.argsort(-(vectors @ vectors[7]))[:3]
    )
    async with db.transaction() as work:
        tables = await work.session.execute(
            text("SELECT name FROM sqlite_master WHERE name = :old"),
            {"old": f"library_chunk_vectors_{DIM}"},
        )
        assert tables.first() is None
        moved = await work.session.execute(
            text(f"SELECT count(*) FROM library_chunk_vectors_{DIM}_i8")
        )
        assert moved.scalar_one() == 30
