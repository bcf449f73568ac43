"""Migrations and table definitions agree, on every backend."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from maestrale.core.db import Database
from maestrale.core.migrate import alembic_config, at_heads, script_heads, upgrade_async
from maestrale.tables import metadata, modelled
from tests.support import databases

pytestmark = pytest.mark.both_databases()


def _diff(connection: Connection) -> list[object]:
    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "include_name": modelled}
    )
    return list(compare_metadata(context, metadata))


async def test_schema_matches_tables(db: Database) -> None:
    async with db.engine.connect() as conn:
        diff = await conn.run_sync(_diff)
    assert diff == []


def test_the_heads_read_from_the_files_are_alembic_s() -> None:
    """`upgrade_async` skips Alembic (and its memory) when the database is at these heads."""
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert script_heads() == frozenset(script.get_heads())


async def test_a_database_is_at_the_heads_only_once_migrated(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}"
    assert not await at_heads(url)  # no schema yet
    await upgrade_async(url)
    assert await at_heads(url)


def test_a_server_process_does_not_import_what_one_route_or_command_uses() -> None:
    """numpy (similar events, classifier training) and Alembic (a start at the heads) stay out
    of a serving process until something needs them: ~25 MB of RSS per process."""
    code = (
        "import sys\n"
        "from maestrale import cli\n"
        "cli._parser()\n"
        "from maestrale.app import create_app\n"
        "create_app()\n"
        "print(','.join(m for m in ('numpy', 'alembic') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


@pytest.mark.skipif(not os.environ.get(databases.POSTGRES_ENV), reason="needs Postgres")
async def test_replicas_migrating_at_once_all_start() -> None:
    """Three `maestrale migrate` processes on one empty Postgres database at once (replicas with
    `auto_migrate` starting together): one applies the migrations, the others wait for it and
    find nothing to do; all succeed."""
    url = await databases.create_postgres_database(migrate=False)
    env = {**os.environ, "MAESTRALE_DATABASE_URL": url}
    try:
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "maestrale",
                "migrate",
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            for _ in range(3)
        ]
        outputs = await asyncio.gather(*(proc.communicate() for proc in procs))
        for proc, (out, _) in zip(procs, outputs, strict=True):
            assert proc.returncode == 0, out.decode(errors="replace")[-2000:]
        assert await at_heads(url)
    finally:
        await databases.drop_postgres_database(url)
