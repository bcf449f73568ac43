"""Schema migrations (Alembic), runnable from the installed package on SQLite and Postgres.

Alembic (with Mako) costs a server process ~10 MB that stays for its whole life once imported,
and a start at the schema's head has nothing to migrate: `upgrade_async` first compares the
database's `alembic_version` with the heads of the migration files (read with `ast`, no
Alembic), and imports Alembic only when they differ or cannot be told.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser interpolation: a literal % in a password must be doubled.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "heads") -> None:
    from alembic import command

    command.upgrade(alembic_config(url), revision)


async def upgrade_async(url: str, revision: str = "heads") -> None:
    """Alembic drives its own event loop, so run it on a thread when called from async code."""
    if revision == "heads" and await at_heads(url):
        return
    await asyncio.to_thread(upgrade, url, revision)


def script_heads(versions: Path = MIGRATIONS_DIR / "versions") -> frozenset[str] | None:
    """The head revisions of the migration files (those no other revision follows), or None
    when a file does not spell its revisions as literals (then Alembic decides)."""
    revisions: set[str] = set()
    followed: set[str] = set()
    for path in versions.glob("*.py"):
        found: dict[str, object] = {}
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target, value = _assignment(node)
            if target in ("revision", "down_revision"):
                try:
                    found[target] = ast.literal_eval(value) if value is not None else None
                except ValueError:
                    return None
        revision, down = found.get("revision"), found.get("down_revision")
        if not isinstance(revision, str):
            return None
        revisions.add(revision)
        if isinstance(down, str):
            followed.add(down)
        elif isinstance(down, tuple) and all(isinstance(d, str) for d in down):
            followed.update(down)
        elif down is not None:
            return None
    return frozenset(revisions - followed) or None


def _assignment(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        if isinstance(target, ast.Name):
            return target.id, node.value
    return None, None


async def at_heads(url: str) -> bool:
    """Whether the database is at the heads of the migration files (False when in doubt)."""
    heads = script_heads()
    if heads is None:
        return False
    from maestrale.core.db import create_engine

    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(text("SELECT version_num FROM alembic_version"))
            return frozenset(row[0] for row in rows) == heads
    except Exception:  # no table yet, or an unreachable database: Alembic will tell
        return False
    finally:
        await engine.dispose()
