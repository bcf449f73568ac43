"""Migrations and table definitions agree, on every backend."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection

from maestrale.core.db import Database
from maestrale.tables import metadata, modelled


def _diff(connection: Connection) -> list[object]:
    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "include_name": modelled}
    )
    return list(compare_metadata(context, metadata))


async def test_schema_matches_tables(db: Database) -> None:
    async with db.engine.connect() as conn:
        diff = await conn.run_sync(_diff)
    assert diff == []
