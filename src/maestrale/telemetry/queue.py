"""The ingestion queue: decoded batches wait here, in the process's memory, for the one writer task
that stores them, each batch in transactions of its own. A request only appends (no I/O): the
API never waits on the store, and a store that cannot keep up fills the queue, bounded in
records (spans + logs), past which a batch is refused (429, Retry-After) and counted.

What is lost: the batches queued when the process dies (the exporter's retry of a refused or
failed export is the sender's). A clean shutdown writes what is queued."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from maestrale.core.db import Database, is_unavailable
from maestrale.telemetry.repository import write_logs, write_spans

log = logging.getLogger("maestrale.telemetry")

Row = dict[str, Any]
# Spans or logs per transaction: a large export is written in several short ones. SQLite's
# writes run on the event loop (its transactions are kept short); Postgres' go in large ones.
WRITE_ROWS = 250
POSTGRES_WRITE_ROWS = 2_000
# The queued batches the writer takes together (records), all workspaces alike.
COALESCE_RECORDS = 5_000
RETRIES = 3
# The part of the queue one workspace may hold: a flood from one leaves room for the others.
WORKSPACE_SHARE = 0.5


@dataclass(slots=True)
class Batch:
    """The rows of one export request (one workspace)."""

    spans: list[Row] = field(default_factory=list)
    logs: list[Row] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.spans) + len(self.logs)

    @property
    def workspace(self) -> str:
        rows = self.spans or self.logs
        return str(rows[0]["workspace_id"]) if rows else ""


class IngestQueue:
    def __init__(self, db: Database, max_records: int, *, retry_seconds: float = 1.0) -> None:
        self.db = db
        self.max_records = max_records
        self.retry_seconds = retry_seconds
        self.write_rows = WRITE_ROWS if db.is_sqlite else POSTGRES_WRITE_ROWS
        self._queue: asyncio.Queue[Batch] = asyncio.Queue()
        self._pending = 0
        self._held: Counter[str] = Counter()  # records queued, by workspace
        self._idle = asyncio.Event()
        self._idle.set()
        # What /metrics reports: records accepted and written (by kind), batches refused
        # (queue full), records dropped after failed writes.
        self.accepted: Counter[tuple[str, ...]] = Counter({("spans",): 0, ("logs",): 0})
        self.written: Counter[tuple[str, ...]] = Counter({("spans",): 0, ("logs",): 0})
        self.rejected_batches: Counter[tuple[str, ...]] = Counter({(): 0})
        self.dropped: Counter[tuple[str, ...]] = Counter({("spans",): 0, ("logs",): 0})
        # Metric data points received (counted, not stored).
        self.metric_points = 0

    @property
    def pending(self) -> int:
        """Records queued or being written."""
        return self._pending

    def offer(self, batch: Batch) -> bool:
        """Queue a batch, unless the queue is full or its workspace already holds its share
        (WORKSPACE_SHARE) of it (counted); never blocks. A batch larger than the bound is taken
        when nothing waits (the body limits bound it)."""
        size = batch.size
        if size == 0:
            return True
        workspace = batch.workspace
        if self._pending and (
            self._pending + size > self.max_records
            or self._held[workspace] + size > self.max_records * WORKSPACE_SHARE
        ):
            self.rejected_batches[()] += 1
            return False
        self._pending += size
        self._held[workspace] += size
        self._idle.clear()
        self.accepted[("spans",)] += len(batch.spans)
        self.accepted[("logs",)] += len(batch.logs)
        self._queue.put_nowait(batch)
        return True

    async def run(self) -> None:
        """The writer task: store batches as they come, those waiting together, until
        cancelled."""
        while True:
            taken = [await self._queue.get()]
            size = taken[0].size
            while size < COALESCE_RECORDS and not self._queue.empty():
                taken.append(self._queue.get_nowait())
                size += taken[-1].size
            together = Batch(
                spans=[row for batch in taken for row in batch.spans],
                logs=[row for batch in taken for row in batch.logs],
            )
            try:
                await self._store(together)
            finally:
                for batch in taken:
                    self._done(batch)

    def _done(self, batch: Batch) -> None:
        self._pending -= batch.size
        workspace = batch.workspace
        self._held[workspace] -= batch.size
        if not self._held[workspace]:
            del self._held[workspace]
        if not self._pending:
            self._idle.set()

    async def drain(self) -> None:
        """Wait until every queued batch is written (tests, shutdown)."""
        await self._idle.wait()

    async def close(self) -> None:
        """Write what is still queued (the writer task is stopped by then)."""
        while not self._queue.empty():
            batch = self._queue.get_nowait()
            try:
                await self._store(batch)
            finally:
                self._done(batch)

    async def _store(self, batch: Batch) -> None:
        for kind, rows in (("spans", batch.spans), ("logs", batch.logs)):
            for start in range(0, len(rows), self.write_rows):
                part = rows[start : start + self.write_rows]
                if await self._write(kind, part):
                    self.written[(kind,)] += len(part)
                else:
                    self.dropped[(kind,)] += len(part)

    async def _write(self, kind: str, rows: list[Row]) -> bool:
        """One transaction; a database that is unreachable is waited for a few times."""
        for attempt in range(RETRIES):
            try:
                async with self.db.transaction() as work:
                    if kind == "spans":
                        await write_spans(work.session, rows)
                    else:
                        await write_logs(work.session, rows)
                return True
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if is_unavailable(exc) and attempt + 1 < RETRIES:
                    await asyncio.sleep(self.retry_seconds * (attempt + 1))
                    continue
                log.error(
                    "telemetry: could not write %d %s (%s); dropped",
                    len(rows),
                    kind,
                    type(exc).__name__,
                )
                return False
        return False
