"""A savepoint opened as the first statement of a SQLite transaction belongs to that transaction:
rolling the transaction back takes the savepoint's writes with it (pysqlite left alone would have
committed them when the savepoint was released)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from maestrale.core.db import create_engine


async def test_a_first_savepoint_is_rolled_back_with_its_transaction(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}")
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER UNIQUE)"))
        async with engine.connect() as conn, conn.begin():
            async with conn.begin_nested():
                await conn.execute(text("INSERT INTO t VALUES (1)"))
            await conn.rollback()
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar_one() == 0
    finally:
        await engine.dispose()
