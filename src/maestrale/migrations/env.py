"""Alembic environment: runs migrations on the async engine of the configured URL."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from maestrale.core.db import create_engine
from maestrale.tables import metadata, modelled

config = context.config


def _run(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        # Replicas migrating at once: one applies the migrations, the others wait for its commit
        # and then find the schema at its head.
        connection.execute(text("SELECT pg_advisory_xact_lock(hashtext('maestrale.migrations'))"))
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_name=modelled,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _main() -> None:
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run `maestrale migrate`")
asyncio.run(_main())
