"""Log streams: the stored log records of an execution (of a deployment), then those that arrive,
as server-sent events `event: log`, `id: <row id>`, `data: <ExecutionLogRecord>`; a client
resumes after the last id it saw (`Last-Event-ID`).

The stream polls the store in short transactions of its own (none is held while it waits), in
arrival (row id) order. On Postgres, ids of concurrent writers become visible out of order, so a
poll re-reads from the last position every row before it was read at least `SETTLE` ago
(skipping those it already sent) rather than moving past an id that may still fill in. It sends
a keepalive comment when idle and ends: once the watched execution has ended (its index row
says so, else Temporal) and `GRACE` has passed since, as the worker's log exporter sends in
batches; after `MAX_STREAM_SECONDS` in any case; or when the client goes (the response stops
iterating). A failure after the 200 ends it with an `event: error` message (`StreamError`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.sse import sse_event
from maestrale.core.uow import unit_of_work
from maestrale.workflows.events.streaming import (
    BATCH,
    CLOSE_CHECK_SECONDS,
    ENDED,
    KEEPALIVE,
    KEEPALIVE_SECONDS,
    MAX_STREAM_SECONDS,
    POLL_SECONDS,
    Sessions,
    temporal_end,
)
from maestrale.workflows.telemetry.logs import record
from maestrale.workflows.telemetry.repository import LogScope, WorkflowTelemetryRepository
from maestrale.workflows.temporal.engine import TemporalEngine

log = logging.getLogger("maestrale.workflows.telemetry")

SETTLE_SECONDS = 1.0
GRACE = timedelta(seconds=5)


@dataclass(frozen=True, slots=True)
class LogStreamSpec:
    tenant: Tenant
    scope: LogScope
    after_id: int = 0
    from_ns: int | None = None
    # The execution whose end ends the stream (None: only the time limit ends it).
    watch: str | None = None


class LogStream:
    def __init__(
        self, spec: LogStreamSpec, sessions: Sessions, engine: TemporalEngine | None = None
    ) -> None:
        self.spec = spec
        self.sessions = sessions
        self.engine = engine
        # When the watched execution ended, once known.
        self.end_at: datetime | None = None
        # Every id up to `after` was sent or skipped for good; `sent` holds those sent past it.
        self.after = spec.after_id
        self.sent: set[int] = set()
        # (monotonic time of a read, the highest id it saw): `after` moves to an id once read
        # SETTLE ago.
        self.reads: deque[tuple[float, int]] = deque()
        self.settle = 0.0

    def _settled(self, now: float) -> None:
        while self.reads and now - self.reads[0][0] >= self.settle:
            _, high = self.reads.popleft()
            self.after = max(self.after, high)
        self.sent = {row_id for row_id in self.sent if row_id > self.after}

    async def _read(self) -> tuple[list[bytes], bool, bool]:
        """The messages of the next records, whether a full batch was read, and whether the
        watched execution has ended (and `GRACE` has passed since)."""
        spec = self.spec
        read_at = utcnow()
        async with unit_of_work(self.sessions) as work:
            store = WorkflowTelemetryRepository(work.session, spec.tenant)
            postgres = work.session.get_bind().dialect.name == "postgresql"
            self.settle = SETTLE_SECONDS if postgres else 0.0
            if spec.watch is not None and self.end_at is None:
                watched = await store.execution(spec.watch)
                if watched is None:  # gone (deleted): nothing more will come
                    self.end_at = read_at - GRACE
                elif watched.status in ENDED:
                    self.end_at = watched.end_time or watched.updated_at
            rows = await store.logs_after(spec.scope, self.after, spec.from_ns, BATCH)
        now = time.monotonic()
        out = []
        for row in rows:
            if row.id not in self.sent:
                self.sent.add(row.id)
                data = record(row).model_dump(mode="json")
                out.append(b"id: %d\n" % row.id + sse_event(data, "log"))
        if rows:
            self.reads.append((now, rows[-1].id))
        self._settled(now)
        ended = self.end_at is not None and read_at - self.end_at >= GRACE
        return out, len(rows) == BATCH, ended

    async def _temporal_end(self) -> datetime | None:
        """When Temporal says the watched execution closed (None while it runs); asked with no
        transaction open."""
        assert self.engine is not None and self.spec.watch is not None
        return await temporal_end(self.engine, self.spec.watch)

    async def frames(self) -> AsyncIterator[bytes]:
        try:
            async for frame in self._frames():
                yield frame
        except Exception:
            log.exception("workflow log stream failed")
            yield sse_event({"error": "internal_error", "reason": "the log stream failed"}, "error")

    async def _frames(self) -> AsyncIterator[bytes]:
        start = last_sent = next_check = time.monotonic()
        while True:
            out, full, ended = await self._read()
            for frame in out:
                yield frame
            now = time.monotonic()
            if out:
                last_sent = now
            if full and out:
                continue  # more are stored: no wait
            # The end was seen before this read: what it read, if not a full batch (whose
            # rest is still to read), completes the stream.
            if (ended and not full) or now - start >= MAX_STREAM_SECONDS:
                return
            asks = self.engine is not None and self.spec.watch is not None
            if asks and self.end_at is None and now >= next_check:
                next_check = now + CLOSE_CHECK_SECONDS
                self.end_at = await self._temporal_end()
            if now - last_sent >= KEEPALIVE_SECONDS:
                last_sent = now
                yield KEEPALIVE
            await asyncio.sleep(POLL_SECONDS)
