"""pgvector for real (a Postgres server with the extension, `pgvector_url`): HNSW is the plan
of a search, its recall against the exact scan, the library filter through the iterative
scan, and deletes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
from sqlalchemy import event, text

from maestrale.core.db import Database
from maestrale.core.ids import new_id
from maestrale.libraries import index
from tests.libraries.index.helpers import MODEL, clustered, put, recall_at

DIM = 96
BIG, SMALL, QUERIES = 2700, 300, 30


@pytest.fixture(scope="module")
async def corpus(pgvector_url: str) -> AsyncIterator[tuple[Database, dict[str, Any]]]:
    """A big and a small library of clustered vectors, the queries, and the database."""
    db = Database(pgvector_url, strict=True)
    rng = np.random.default_rng(38)
    vectors = clustered(rng, BIG + SMALL + QUERIES, DIM, clusters=30)
    big, small = new_id(), new_id()
    async with db.transaction() as work:
        await put(work.session, big, new_id(), [f"b{i}" for i in range(BIG)], vectors[:BIG])
        texts = [f"s{i}" for i in range(SMALL)]
        await put(work.session, small, new_id(), texts, vectors[BIG : BIG + SMALL])
        await work.session.execute(text(f"ANALYZE library_chunk_vectors_{DIM}"))
    data = {"vectors": vectors, "big": big, "small": small, "queries": vectors[-QUERIES:]}
    yield db, data
    await db.dispose()


async def _search(db: Database, libraries: list[str], vector: Any) -> list[str]:
    async with db.transaction() as work:
        hits = await index.search(
            work.session, library_ids=libraries, query="", vector=vector, model=MODEL, limit=10
        )
    return [hit.text for hit in hits]


async def test_hnsw_is_the_plan_and_recall_at_10_holds(
    corpus: tuple[Database, dict[str, Any]],
) -> None:
    db, data = corpus
    async with db.transaction() as work:
        assert await index.vector_backend(work.session) is index.VectorBackend.PGVECTOR
    statements: list[tuple[str, Any]] = []

    def seen(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if "<=>" in statement and not statement.startswith("EXPLAIN"):
            statements.append((statement, params))

    event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
    try:
        found = [await _search(db, [data["big"]], q) for q in data["queries"]]
        async with db.transaction() as work:
            raw = await work.session.connection()
            await raw.exec_driver_sql("SET LOCAL hnsw.iterative_scan = relaxed_order")
            plan = await raw.exec_driver_sql("EXPLAIN " + statements[0][0], statements[0][1])
            assert f"library_chunk_vectors_{DIM}_hnsw" in "\n".join(r[0] for r in plan)
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
    corpus_vectors = data["vectors"][:BIG]
    exact = [[f"b{i}" for i in np.argsort(-(corpus_vectors @ q))[:10]] for q in data["queries"]]
    assert recall_at(found, exact) >= 0.95


async def test_the_library_filter_holds_and_deletes_follow(
    corpus: tuple[Database, dict[str, Any]],
) -> None:
    db, data = corpus
    small_vectors = data["vectors"][BIG : BIG + SMALL]
    # Queries nearest to the big library's vectors: the filter drops most of what HNSW meets.
    queries = data["vectors"][:QUERIES]
    found = [await _search(db, [data["small"]], q) for q in queries]
    exact = [[f"s{i}" for i in np.argsort(-(small_vectors @ q))[:10]] for q in queries]
    assert all(len(f) == 10 for f in found)
    assert recall_at(found, exact) >= 0.95
    doomed = new_id()
    async with db.transaction() as work:
        await put(work.session, data["small"], doomed, ["doomed"], queries[:1])
    assert (await _search(db, [data["small"]], queries[0]))[0] == "doomed"
    async with db.transaction() as work:
        await index.delete_document(work.session, data["small"], doomed)
        left = await work.session.execute(
            text(f"SELECT count(*) FROM library_chunk_vectors_{DIM} WHERE library_id = :lib"),
            {"lib": data["small"]},
        )
        assert left.scalar_one() == SMALL
    assert "doomed" not in await _search(db, [data["small"]], queries[0])
