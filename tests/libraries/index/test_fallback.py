"""Without a vector extension: the exact scan, its warning, and the extension catching up with
what was written without it (SQLite, where sqlite-vec can be kept out of a connection)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from maestrale.core.db import (
    Database,
    create_engine,
    is_sqlite,
    sqlite_can_load_extensions,
    sqlite_vec_path,
)
from maestrale.core.ids import new_id
from maestrale.libraries import index
from maestrale.libraries.index import capability
from tests.libraries.index.helpers import DIM, MODEL, filler, put, unit

pytestmark = pytest.mark.both_databases()

EXTENSION = sqlite_can_load_extensions() and sqlite_vec_path() is not None


@pytest.fixture
async def sessions(
    database_url: str,
) -> AsyncIterator[tuple[async_sessionmaker[AsyncSession], async_sessionmaker[AsyncSession]]]:
    """Sessions without sqlite-vec, and with it where it loads, on the same SQLite file."""
    if not is_sqlite(database_url):
        pytest.skip("the extension is kept out of SQLite connections only")
    without = create_engine(database_url, load_extensions=False)
    with_ = create_engine(database_url)
    yield (
        async_sessionmaker(without, expire_on_commit=False),
        async_sessionmaker(with_, expire_on_commit=False),
    )
    await without.dispose()
    await with_.dispose()


async def _search(
    session: AsyncSession, library: str, query: str, vector: object, limit: int = 3
) -> list[str]:
    hits = await index.search(
        session, library_ids=[library], query=query, vector=vector, model=MODEL, limit=limit
    )
    return [hit.text for hit in hits]


async def test_the_exact_scan_answers_and_says_what_to_install(
    sessions: tuple[async_sessionmaker[AsyncSession], async_sessionmaker[AsyncSession]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    plain, _ = sessions
    capability._warn_exact_scan.cache_clear()
    rng = np.random.default_rng(1)
    library = new_id()
    vectors = unit(rng, 200)
    texts = filler(rng, 200)
    texts[7] = "the zephyr clause"
    with caplog.at_level(logging.WARNING, logger="maestrale.libraries.index"):
        async with plain.begin() as session:
            assert await index.vector_backend(session) is index.VectorBackend.EXACT
            await put(session, library, new_id(), texts, vectors)
        async with plain.begin() as session:
            found = await _search(session, library, "zephyr", vectors[150], limit=2)
            assert set(found) == {texts[7], texts[150]}
            expected = [texts[i] for i in np.argsort(-(vectors @ vectors[3]))[:5]]
            assert await _search(session, library, "", vectors[3], limit=5) == expected
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "exact scan" in warnings[0] and "sqlite-vec" in warnings[0]


@pytest.mark.skipif(not EXTENSION, reason="this Python's sqlite3 cannot load sqlite-vec")
async def test_the_extension_catches_up_with_what_was_written_without_it(
    sessions: tuple[async_sessionmaker[AsyncSession], async_sessionmaker[AsyncSession]],
) -> None:
    plain, vec = sessions
    rng = np.random.default_rng(2)
    library = new_id()
    doc_a, doc_b = new_id(), new_id()
    vectors = unit(rng, 40)
    texts = [f"passage {i}" for i in range(40)]
    async with vec.begin() as session:
        await put(session, library, doc_a, texts[:20], vectors[:20])
    async with plain.begin() as session:
        # Written without the extension: not in its table yet.
        await put(session, library, doc_b, texts[20:], vectors[20:])
        # Deleted without it: the vec0 rows of doc_a stay behind.
        await index.delete_document(session, library, doc_a)
    table = f"library_chunk_vectors_{DIM}_i8"
    async with vec.begin() as session:
        assert (await session.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one() == 20
        assert await _search(session, library, "", vectors[33], limit=1) == [texts[33]]
        # doc_b's vectors were added, doc_a's leftovers met by the search were dropped.
        left = (await session.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one()
        assert left == 20
        assert await _search(session, library, "", vectors[5], limit=20) == [
            texts[i] for i in 20 + np.argsort(-(vectors[20:] @ vectors[5]))
        ]
    async with vec.begin() as session:
        await index.delete_library(session, library)
        assert (await session.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one() == 0


async def test_postgres_without_pgvector_scans_exactly_and_says_so(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    if db.is_sqlite:
        pytest.skip("Postgres only")
    capability._warn_exact_scan.cache_clear()
    with caplog.at_level(logging.WARNING, logger="maestrale.libraries.index"):
        async with db.transaction() as work:
            installed = (
                await work.session.execute(
                    text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
                )
            ).first()
            if installed:
                pytest.skip("pgvector is installed here")
            assert await index.vector_backend(work.session) is index.VectorBackend.EXACT
            assert await index.vector_backend(work.session) is index.VectorBackend.EXACT
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith("pgvector is not installed: vector search")
    assert "exact scan" in warnings[0]
