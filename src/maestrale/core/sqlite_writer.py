"""A thread and a connection of their own for background writes to a SQLite file.

The pooled connections (aiosqlite) hop between the event loop and their thread for every call,
each hop a GIL hand-over; a background writer that runs a whole transaction in one hop, on a
thread of its own, holds the GIL only for its own Python work (its callers keep that small: one
statement per batch of rows, one orjson call a row) and leaves the loop alone while SQLite works
with the GIL released.

Its thread runs at a lower CPU priority (nice 5, Linux only): what it writes is background work
that should not take the core from the requests when both want it. The scheduler still gives it
the idle time and ~1/4 of a contended core, several times what it needs at the highest request
rate one core serves, so it keeps up. Not lower: a thread holding the GIL that the scheduler
leaves waiting would hold up the loop too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from sqlalchemy.exc import DBAPIError

T = TypeVar("T")

BACKGROUND_NICE = 5


class SqliteWriter:
    """Runs `fn(connection)` in one transaction on the writer's own thread and connection."""

    def __init__(self, path: str, *, nice: int = BACKGROUND_NICE, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self.nice = nice
        self._conn: sqlite3.Connection | None = None
        self._executor = ThreadPoolExecutor(
            1, thread_name_prefix="sqlite-writer", initializer=self._lower_priority
        )

    def _lower_priority(self) -> None:
        if self.nice and sys.platform == "linux":  # a thread id is a valid PRIO_PROCESS target
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self.nice)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
                conn.execute(f"PRAGMA {pragma}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._conn
        try:
            if conn is None:
                conn = self._conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")  # the write lock now, not at the first write
            try:
                result = fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise
            return result
        except sqlite3.Error as exc:
            if conn is not None and not _usable(conn):
                self._drop_connection()
            # As SQLAlchemy raises it (OperationalError, IntegrityError...): callers tell a
            # database failure from bad rows the same way on every path.
            raise DBAPIError.instance(None, None, exc, sqlite3.Error, hide_parameters=True) from exc

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    async def transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """`fn(connection)` in one transaction (committed, or rolled back on error), run on the
        writer's thread; sqlite3 errors are raised as SQLAlchemy's DBAPIError subclasses."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._transaction, fn)

    async def close(self) -> None:
        """Close the connection on its thread and stop the thread."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._drop_connection)
        self._executor.shutdown(wait=False)


def _usable(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except sqlite3.Error:
        return False
    return True
