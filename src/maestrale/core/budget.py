"""A time budget for the statements of a block: Postgres' own `statement_timeout` (set for the
transaction only), SQLite's progress handler (which interrupts the running statement once the
deadline passed). Past its budget a statement fails with StatementTimeout; the connection is
left as it was found (on Postgres, once the transaction ends).

SQLite's handler runs on the driver's thread and needs the GIL, so it is installed only for the
block and called every PROGRESS_OPS virtual machine instructions (about a millisecond of work):
queries outside a budget never pay for it."""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from maestrale.core.db import sqlstate_of

PROGRESS_OPS = 20_000
QUERY_CANCELED = "57014"


class StatementTimeout(Exception):
    """A statement ran out of its time budget (and was cancelled by the database)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"statement cancelled after its budget of {seconds:g} s")
        self.seconds = seconds


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a database error, wrapped by SQLAlchemy or not (a server-side cursor's
    fetch raises the driver's own)."""
    if isinstance(exc, DBAPIError):
        return sqlstate_of(exc)
    code = getattr(exc, "sqlstate", None)
    return code if isinstance(code, str) else None


def is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, OperationalError) and "interrupted" in str(exc.orig):
        return True  # SQLite: the progress handler stopped the statement
    return sqlstate(exc) == QUERY_CANCELED


class Budget:
    """The budget of a block; `renew()` grants a fresh one to what follows (a stream's next
    chunk: the time its reader took between chunks is not the database's)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def renew(self) -> None:
        self.deadline = time.monotonic() + self.seconds


@asynccontextmanager
async def statement_budget(
    target: AsyncSession | AsyncConnection, seconds: float, *, custom_plans: bool = False
) -> AsyncIterator[Budget]:
    """Every statement run in the block must finish within `seconds`: of the block's start or
    its last `renew()` (SQLite), of its own start (Postgres). `custom_plans`: Postgres plans
    each statement for its values (for the rest of the transaction), never with the generic
    plan of a prepared statement, which knows no value: right for searches, whose best plan
    depends on how common the values they look for are."""
    conn = await target.connection() if isinstance(target, AsyncSession) else target
    handle = Budget(seconds)
    budget = _Postgres(conn, custom_plans) if conn.dialect.name == "postgresql" else _SQLite(conn)
    await budget.start(handle)
    try:
        yield handle
    except BaseException as exc:
        await budget.failed()
        if is_timeout(exc):
            raise StatementTimeout(seconds) from exc
        raise
    await budget.stop()


class _Postgres:
    """SET LOCAL statement_timeout: in force until the transaction ends (its later statements
    keep the budget, each its own), when Postgres restores the connection's setting. Setting
    it back in the block would be a statement under the budget itself, which a tiny budget
    could cancel after the search succeeded."""

    def __init__(self, conn: AsyncConnection, custom_plans: bool) -> None:
        self.conn = conn
        self.plans = "force_custom_plan" if custom_plans else "auto"

    async def start(self, budget: Budget) -> None:
        ms = max(1, math.ceil(budget.seconds * 1000))
        await self.conn.execute(
            text(
                "SELECT set_config('statement_timeout', :ms, true), "
                "set_config('plan_cache_mode', :plans, true)"
            ),
            {"ms": str(ms), "plans": self.plans},
        )

    async def stop(self) -> None:
        return None

    async def failed(self) -> None:
        return None


class _SQLite:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn
        self.driver: Any = None

    async def start(self, budget: Budget) -> None:
        raw = await self.conn.get_raw_connection()
        self.driver = raw.driver_connection  # the aiosqlite connection

        def progress() -> int:
            return 1 if time.monotonic() > budget.deadline else 0

        await self.driver.set_progress_handler(progress, PROGRESS_OPS)

    async def stop(self) -> None:
        await self.driver.set_progress_handler(None, 0)

    async def failed(self) -> None:
        await self.stop()
