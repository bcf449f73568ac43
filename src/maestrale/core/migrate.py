"""Schema migrations (Alembic), runnable from the installed package on SQLite and Postgres."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser interpolation: a literal % in a password must be doubled.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "heads") -> None:
    command.upgrade(alembic_config(url), revision)


async def upgrade_async(url: str, revision: str = "heads") -> None:
    """Alembic drives its own event loop, so run it on a thread when called from async code."""
    await asyncio.to_thread(upgrade, url, revision)
