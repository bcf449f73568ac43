"""The background writer of usage records and chat completion events.

The request path only appends a row to an in-memory buffer (no I/O, no await); a background task
writes the buffer in one transaction every `interval` seconds (0.25 s by default, so a call is
durable within a second), and `close()` writes what is left at shutdown. A write that fails
because the database is unreachable or busy is retried on the next tick, the buffer bounded so
that a long outage cannot exhaust memory (the oldest rows are dropped then, and counted in the
log).

Any other failure is blamed on the rows, never on the whole buffer: one row that cannot be
written (NUL characters Postgres refuses, JSON orjson cannot serialise, a value out of a column's
range, whatever the exception) must not hold back every row behind it, for every tenant, for
ever. The batch is split in halves until the bad rows are alone; each is written again scrubbed
(`scrub_row`), and dropped if even that fails. Both are counted (`rejected`, exposed in
/metrics) and logged without their content.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import Counter
from typing import Any

from sqlalchemy import insert
from sqlalchemy.exc import DataError, DBAPIError, DisconnectionError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from maestrale.accounting.tables import UsageRecord
from maestrale.core.db import Database, is_data_error
from maestrale.core.validation import INT64_MAX, INT64_MIN, MAX_JSON_DEPTH
from maestrale.observability.events.tables import ChatCompletionEvent

log = logging.getLogger("maestrale.accounting")

MAX_BUFFERED = 200_000

USAGE, EVENTS = "usage", "events"
_TABLES = (USAGE, EVENTS)


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
        self._usage: list[dict[str, Any]] = []
        self._events: list[dict[str, Any]] = []
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
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

    @property
    def pending(self) -> int:
        return len(self._usage) + len(self._events)

    async def flush(self) -> None:
        async with self._lock:
            usage, events = self._usage, self._events
            if not usage and not events:
                return
            self._usage, self._events = [], []
            try:
                await self._write(usage, events)
                return
            except Exception as exc:
                if is_transient(exc):
                    self._put_back(usage, events)
                    raise
            # Some row is bad: each table on its own, the bad rows isolated.
            left, failure = await self._isolate(USAGE, usage)
            if failure is not None:
                self._put_back(left, events)
                raise failure
            left, failure = await self._isolate(EVENTS, events)
            if failure is not None:
                self._put_back([], left)
                raise failure

    def _put_back(self, usage: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        # In front of what was buffered meanwhile: written on the next tick, in order.
        self._usage[:0] = usage
        self._events[:0] = events

    async def _write(self, usage: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        async with self.db.session() as session:
            if usage:
                await session.execute(insert(UsageRecord), usage)
            if events:
                await session.execute(insert(ChatCompletionEvent), events)

    async def _write_rows(self, table: str, rows: list[dict[str, Any]]) -> None:
        if table == USAGE:
            await self._write(rows, [])
        else:
            await self._write([], rows)

    async def _isolate(
        self, table: str, rows: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], Exception | None]:
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
            self.rejected[(table, outcome)] += 1
            log.error(
                "accounting: a %s row could not be written (%s: %s); %s",
                table,
                type(error).__name__,
                _reason(error),
                outcome,
            )
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
            except Exception:
                log.exception("could not write %d accounting rows; retrying", self.pending)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="accounting")

    async def close(self) -> None:
        """Stop the background task and write what is left (after a write under way)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.flush()  # takes the lock: a shielded write under way finishes first


def _reason(exc: BaseException) -> str:
    # The driver's or serialiser's own words, without the statement and its parameters.
    cause = getattr(exc, "orig", None) or exc
    return str(cause).split("\n", 1)[0][:200]


def scrub_row(row: dict[str, Any]) -> dict[str, Any]:
    """The row with every value made storable: NUL characters (which Postgres cannot store) and
    lone surrogates replaced, integers beyond 64 bits and numbers that are not finite written as
    text, JSON nested too deep cut at its limit."""
    return {key: _scrub(value, 0) for key, value in row.items()}


def _scrub(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return _scrub_text(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if INT64_MIN <= value <= INT64_MAX else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        if depth >= MAX_JSON_DEPTH:
            return "[nested too deep]"
        return [_scrub(item, depth + 1) for item in value]
    if isinstance(value, dict):
        if depth >= MAX_JSON_DEPTH:
            return "{nested too deep}"
        return {_scrub_text(str(key)): _scrub(item, depth + 1) for key, item in value.items()}
    return value


def _scrub_text(text: str) -> str:
    text = text.replace("\x00", "\ufffd")
    if text.isascii():
        return text
    # Lone surrogates (from `\ud800` escapes) become U+FFFD; valid pairs are kept.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
