"""Test databases: a migrated SQLite template copied per test, and one Postgres database per run
(when MAESTRALE_TEST_POSTGRES_URL is set) emptied between tests."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import asyncpg
from sqlalchemy import text
from sqlalchemy.engine import make_url

from maestrale.core.db import create_engine
from maestrale.core.migrate import upgrade
from maestrale.tables import metadata

POSTGRES_ENV = "MAESTRALE_TEST_POSTGRES_URL"
EVERY_BACKEND_ENV = "MAESTRALE_TEST_EVERY_BACKEND"
# The marker of the tests that run on both backends.
BOTH = "both_databases"


def backends(both: bool = True) -> list[str]:
    """The backends of a database test: Postgres too where it is configured and the test is one
    of `both` (or every test is, by EVERY_BACKEND_ENV)."""
    if os.environ.get(POSTGRES_ENV) and (both or os.environ.get(EVERY_BACKEND_ENV)):
        return ["sqlite", "postgres"]
    return ["sqlite"]


def sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


def make_sqlite_template(directory: Path) -> Path:
    path = directory / "template.sqlite"
    upgrade(sqlite_url(path))
    return path


def copy_sqlite(template: Path, directory: Path) -> str:
    target = directory / f"db-{uuid.uuid4().hex[:8]}.sqlite"
    shutil.copyfile(template, target)
    return sqlite_url(target)


def _asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def create_postgres_database(migrate: bool = True) -> str:
    """A fresh database next to the one named by MAESTRALE_TEST_POSTGRES_URL, migrated unless
    `migrate` is False."""
    base = make_url(os.environ[POSTGRES_ENV]).set(drivername="postgresql+asyncpg")
    name = f"maestrale_test_{uuid.uuid4().hex[:10]}"
    conn = await asyncpg.connect(_asyncpg_dsn(base.render_as_string(hide_password=False)))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    url = base.set(database=name).render_as_string(hide_password=False)
    if migrate:
        import asyncio

        await asyncio.to_thread(upgrade, url)
    return url


async def drop_postgres_database(url: str) -> None:
    parsed = make_url(url)
    admin = make_url(os.environ[POSTGRES_ENV]).set(drivername="postgresql+asyncpg")
    conn = await asyncpg.connect(_asyncpg_dsn(admin.render_as_string(hide_password=False)))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{parsed.database}" WITH (FORCE)')
    finally:
        await conn.close()


# One query that names the tables holding a row: a TRUNCATE of all 50 tables costs ~150 ms (every
# table and index gets new files), a probe ~2 ms, and most tests fill only a few tables.
_NON_EMPTY = " UNION ALL ".join(
    f"(SELECT '{t.name}' FROM \"{t.name}\" LIMIT 1)" for t in metadata.sorted_tables
)


async def empty_postgres(url: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            full = ", ".join(f'"{row[0]}"' for row in await conn.execute(text(_NON_EMPTY)))
            if full:
                await conn.execute(text(f"TRUNCATE {full} CASCADE"))
    finally:
        await engine.dispose()
