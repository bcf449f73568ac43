"""The background writer of usage records and chat completion events.

The request path only appends a row to an in-memory buffer (no I/O, no await); a background task
writes the buffer every `interval` seconds (0.25 s by default, so a call is durable within a
second), and `close()` writes what is left at shutdown. A write that fails because the database
is unreachable or busy is retried on the next tick, the buffer bounded so that a long outage
cannot exhaust memory (the oldest rows are dropped then, and counted in the log).

Any other failure is blamed on the rows, never on the whole buffer: one row that cannot be
written (NUL characters Postgres refuses, JSON orjson cannot serialise, a value out of a column's
range, whatever the exception) must not hold back every row behind it, for every tenant, for
ever. The batch is split in halves until the bad rows are alone; each is written again scrubbed
(`scrub_row`), and dropped if even that fails. Both are counted (`rejected`, exposed in
/metrics) and logged without their content.

What the write costs the event loop (docs/architecture.md §8: the loop serves the requests): a flush
is cut into transactions of at most BATCH_ROWS rows of each table, each table's rows written by one
statement that takes them as one JSON parameter (`bulk`: one orjson call a row, the database
does the rest). On a SQLite file the transactions run on a thread and a connection of their own
(`SqliteWriter`), rows serialised there: the loop only hands the lists over. On Postgres the
loop serialises one batch at a time (~1 ms) and awaits its statement.
Durability is unchanged: a clean shutdown writes every row; a crash loses the rows of the last
`interval` seconds and of a write under way, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections import Counter
from functools import partial
from typing import Any, cast

from sqlalchemy import Table, text
from sqlalchemy.exc import DataError, DBAPIError, DisconnectionError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from maestrale.accounting.bulk import BATCH_ROWS, BulkInsert, batches
from maestrale.accounting.scrub import scrub_row
from maestrale.accounting.tables import ChatCompletionEvent, UsageRecord
from maestrale.core.db import Database, is_data_error
from maestrale.core.repeated_failure import RepeatedFailure
from maestrale.core.sqlite_writer import SqliteWriter

log = logging.getLogger("maestrale.accounting")

MAX_BUFFERED = 200_000

USAGE, EVENTS = "usage", "events"
_TABLES = (USAGE, EVENTS)
_BULK = {
    USAGE: BulkInsert(cast(Table, UsageRecord.__table__)),
    EVENTS: BulkInsert(cast(Table, ChatCompletionEvent.__table__)),
}

Rows = list[dict[str, Any]]


def is_transient(exc: BaseException) -> bool:
    """A failure of the database rather than of the rows: keep them and retry later.

    The database refusing a value (SQLSTATE class 22) or a constraint (class 23) is the rows'
    fault; so is anything raised before the statement reached the database (serialising a JSON
    column, binding an integer the driver cannot hold). An unreachable, locked or restarting
    database is not, nor a timeout (of the pool or of the network).
    """
    if isinstance(exc, DBAPIError):
        return not (isinstance(exc, (DataError, IntegrityError)) or is_data_error(exc))
    return isinstance(exc, (OSError, TimeoutError, PoolTimeout, DisconnectionError))


class Recorder:
    def __init__(self, db: Database, *, interval: float = 0.25) -> None:
        self.db = db
        self.interval = interval
        self._sqlite = db.is_sqlite
        self._usage: Rows = []
        self._events: Rows = []
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._failures = RepeatedFailure(log, "could not write accounting rows; retrying")
        sqlite_file = db.sqlite_file
        self._writer = SqliteWriter(sqlite_file) if sqlite_file else None
        # (table, "scrubbed" | "dropped") → rows: what /metrics reports.
        self.rejected: Counter[tuple[str, ...]] = Counter(
            {(table, outcome): 0 for table in _TABLES for outcome in ("scrubbed", "dropped")}
        )

    def record(self, usage: dict[str, Any], event: dict[str, Any] | None = None) -> None:
        """Buffer one call's usage row (and its event); never blocks, never raises."""
        self._usage.append(usage)
        if event is not None:
            self._events.append(event)
        if len(self._usage) + len(self._events) > MAX_BUFFERED:
            drop = len(self._usage) // 10 or 1
            del self._usage[:drop]
            del self._events[:drop]
            log.error("accounting buffer full: dropped the %d oldest rows", drop)

    def _rejected(self, table: str, outcome: str, error: BaseException) -> None:
        self.rejected[(table, outcome)] += 1
        log.error(
            "accounting: a %s row could not be written (%s: %s); %s",
            table,
            type(error).__name__,
            _reason(error),
            outcome,
        )

    @property
    def pending(self) -> int:
        return len(self._usage) + len(self._events)

    async def flush(self) -> None:
        async with self._lock:
            usage, events = self._usage, self._events
            self._usage, self._events = [], []
            for start in range(0, max(len(usage), len(events)), BATCH_ROWS):
                end = start + BATCH_ROWS
                left, failure = await self._write_batch(usage[start:end], events[start:end])
                if failure is not None:
                    self._put_back(left[0] + usage[end:], left[1] + events[end:])
                    raise failure

    async def _write_batch(
        self, usage: Rows, events: Rows
    ) -> tuple[tuple[Rows, Rows], Exception | None]:
        """One transaction of at most BATCH_ROWS rows of each table, bad rows isolated. When the
        database fails (transiently): the rows left unwritten, and the failure."""
        try:
            await self._write(usage, events)
            return ([], []), None
        except Exception as exc:
            if is_transient(exc):
                return (usage, events), exc
        # Some row is bad: each table on its own, the bad rows isolated.
        left, failure = await self._isolate(USAGE, usage)
        if failure is not None:
            return (left, events), failure
        left, failure = await self._isolate(EVENTS, events)
        if failure is not None:
            return ([], left), failure
        return ([], []), None

    def _put_back(self, usage: Rows, events: Rows) -> None:
        # In front of what was buffered meanwhile: written on the next tick, in order.
        self._usage[:0] = usage
        self._events[:0] = events

    async def _write(self, usage: Rows, events: Rows) -> None:
        """Write the rows of both tables in one transaction."""
        if self._writer is not None:
            await self._writer.transaction(partial(_insert_sqlite, usage, events))
            return
        async with self.db.transaction() as work:  # Postgres, or an in-memory SQLite
            for table, rows in ((USAGE, usage), (EVENTS, events)):
                bulk = _BULK[table]
                sql = bulk.sqlite_sql.replace("?", ":rows") if self._sqlite else bulk.postgres_sql
                for payload in batches(bulk, rows, sqlite=self._sqlite):
                    await work.session.execute(text(sql), {"rows": payload})

    async def _write_rows(self, table: str, rows: Rows) -> None:
        if table == USAGE:
            await self._write(rows, [])
        else:
            await self._write([], rows)

    async def _isolate(self, table: str, rows: Rows) -> tuple[Rows, Exception | None]:
        """Write `rows`, halving a batch that fails until its bad rows stand alone (a few
        transactions per bad row); a bad row is written scrubbed, or dropped. When the database
        itself fails meanwhile: the rows left unwritten (to be retried), and the failure."""
        segments = [rows] if rows else []
        while segments:
            segment = segments.pop(0)
            try:
                await self._write_rows(table, segment)
                continue
            except Exception as exc:
                if is_transient(exc):
                    return [row for part in (segment, *segments) for row in part], exc
                error = exc
            if len(segment) > 1:
                middle = len(segment) // 2
                segments[:0] = [segment[:middle], segment[middle:]]
                continue
            try:
                await self._write_rows(table, [scrub_row(segment[0])])
                outcome = "scrubbed"
            except Exception as exc:
                if is_transient(exc):
                    return [row for part in (segment, *segments) for row in part], exc
                outcome = "dropped"
            self._rejected(table, outcome, error)
        return [], None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                # Shielded: `close()` cancels this task, and a write cut short would lose its
                # rows (they are out of the buffer) and could leave its connection in a
                # transaction (on SQLite, holding the write lock the last flush then waits on).
                await asyncio.shield(self.flush())
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._failures.what = f"could not write {self.pending} accounting rows; retrying"
                self._failures.failed(exc)
            else:
                self._failures.succeeded()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="accounting")

    async def close(self) -> None:
        """Stop the background task and write what is left (after a write under way)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        try:
            await self.flush()  # takes the lock: a shielded write under way finishes first
        finally:
            if self._writer is not None:
                await self._writer.close()


def _insert_sqlite(usage: Rows, events: Rows, conn: sqlite3.Connection) -> None:
    # On the writer's thread, rows serialised here too: the loop only handed the lists over, and
    # each execute releases the GIL while SQLite works.
    for table, rows in ((USAGE, usage), (EVENTS, events)):
        bulk = _BULK[table]
        for payload in batches(bulk, rows, sqlite=True):
            conn.execute(bulk.sqlite_sql, (payload,))


def _reason(exc: BaseException) -> str:
    # The driver's or serialiser's own words, without the statement and its parameters.
    cause = getattr(exc, "orig", None) or exc
    return str(cause).split("\n", 1)[0][:200]
