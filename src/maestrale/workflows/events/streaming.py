"""Event streams: the stored events, then those that arrive, as server-sent events.

Each event is one SSE message, `id: <seq>` and `data: <StreamEventSsePayload>`; a client resumes
after the last id it saw. The stream polls the events table, each poll in a short transaction of
its own (none is held while it waits), sends a keepalive comment when idle, and ends:
- when the execution it watches has ended (its final event came, or its index row or Temporal
  say so) and a grace period has passed since: events come best-effort, batched and out of
  order, and every one that came by then was sent;
- at once after the stored events for `event_source=DATABASE`;
- after `MAX_STREAM_SECONDS` in any case (clients resume with their last id).
A failure after the 200 ends it with an `event: error` message (`WorkflowStreamError`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.sse import sse_event
from maestrale.core.uow import unit_of_work
from maestrale.workflows.errors import WorkflowError
from maestrale.workflows.events.repository import (
    EventFilter,
    WorkflowEventRepository,
    ns_to_datetime,
)
from maestrale.workflows.events.schemas import FINAL
from maestrale.workflows.events.tables import WorkflowEvent
from maestrale.workflows.executions.tables import ExecutionStatus
from maestrale.workflows.temporal.engine import TemporalEngine

log = logging.getLogger("maestrale.workflows.events")

STREAM_NAME = "events"
POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15.0
MAX_STREAM_SECONDS = 30 * 60.0
# How often an idle stream asks whether its execution has closed, and how long after the end
# it waits for events the worker may still be sending (they are best-effort and batched).
CLOSE_CHECK_SECONDS = 5.0
GRACE = timedelta(seconds=3)
BATCH = 200
KEEPALIVE = b": keepalive\n\n"

# A closed run that another follows is no end of its execution.
ENDED = ExecutionStatus.CLOSED - {ExecutionStatus.CONTINUED_AS_NEW}

Sessions = async_sessionmaker[AsyncSession]


async def temporal_end(engine: TemporalEngine, execution_id: str) -> datetime | None:
    """When Temporal says the execution closed (now when it no longer knows it: retention);
    None while it runs. Ask it with no transaction open."""
    try:
        described = await engine.describe(execution_id)
    except WorkflowError as exc:
        return utcnow() if exc.status_code == 404 else None  # 404: gone (retention)
    return (described.close_time or utcnow()) if described.status in ENDED else None


@dataclass(frozen=True, slots=True)
class StreamSpec:
    tenant: Tenant
    namespace: str
    wanted: EventFilter
    after: int = 0
    follow: bool = True
    # The execution whose end ends the stream (None: the stream only ends on its time limit).
    watch: str | None = None
    # What SQL does not filter (fields inside the event's body).
    keep: Callable[[dict[str, Any]], bool] | None = None


def message(row: WorkflowEvent, namespace: str) -> bytes:
    body = row.body
    payload = {
        "stream": STREAM_NAME,
        "data": body,
        "workflow_context": {
            "namespace": namespace,
            "workflow_name": row.workflow_name or str(body.get("workflow_name") or ""),
            "workflow_exec_id": row.execution_id,
            "parent_workflow_exec_id": body.get("parent_workflow_exec_id"),
            "root_workflow_exec_id": row.root_execution_id,
        },
        "broker_sequence": row.seq,
        "timestamp": ns_to_datetime(row.timestamp_ns).isoformat(),
        "metadata": {},
    }
    return b"id: %d\n" % row.seq + sse_event(payload)


def error_message(error: str, reason: str) -> bytes:
    return sse_event({"error": error, "reason": reason}, "error")


class EventStream:
    """One client's stream (`frames()`), reading with its own short sessions."""

    def __init__(self, spec: StreamSpec, sessions: Sessions, engine: TemporalEngine | None):
        self.spec = spec
        self.sessions = sessions
        self.engine = engine
        self.after = spec.after
        # When the watched execution's final event arrived, once read.
        self.final_at: datetime | None = None
        # How far behind the time of a read the events it saw are complete.
        self.lag = timedelta(0)

    async def _read(self) -> tuple[list[bytes], int]:
        """The messages of the next events, and how many events were read."""
        spec = self.spec
        async with unit_of_work(self.sessions) as work:
            events = WorkflowEventRepository(work.session, spec.tenant)
            self.lag = events.settle_lag() if spec.follow else timedelta(0)
            rows = await events.after(self.after, spec.wanted, BATCH, settled=spec.follow)
            out = []
            for row in rows:
                if spec.watch and row.execution_id == spec.watch and row.event_type in FINAL:
                    self.final_at = self.final_at or row.received_at
                if spec.keep is None or spec.keep(row.body):
                    out.append(message(row, spec.namespace))
        if rows:
            self.after = rows[-1].seq
        return out, len(rows)

    async def _ended(self) -> datetime | None:
        """When the watched execution ended, as its index row says, else Temporal; None while
        it runs (or while it is unknown: then only its final event ends the stream)."""
        execution_id = self.spec.watch
        assert execution_id is not None
        async with unit_of_work(self.sessions) as work:
            events = WorkflowEventRepository(work.session, self.spec.tenant)
            row = await events.execution(execution_id)
            status, end = (None, None) if row is None else (row.status, row.end_time)
        if status in ENDED:
            return end or utcnow()
        if row is None or self.engine is None:
            return None
        return await temporal_end(self.engine, execution_id)

    async def frames(self) -> AsyncIterator[bytes]:
        try:
            async for frame in self._frames():
                yield frame
        except WorkflowError as exc:
            yield error_message(exc.wf_code, exc.message)
        except Exception:
            log.exception("workflow event stream failed")
            yield error_message("internal_error", "the event stream failed")

    async def _frames(self) -> AsyncIterator[bytes]:
        spec = self.spec
        start = time.monotonic()
        last_sent = start
        next_check = start
        ended: datetime | None = None
        while True:
            read_at = utcnow()
            out, read = await self._read()
            for frame in out:
                yield frame
            now = time.monotonic()
            if out:
                last_sent = now
            if read == BATCH:
                continue  # more are stored: no wait
            if not spec.follow or now - start >= MAX_STREAM_SECONDS:
                return
            if spec.watch is not None:
                ended = ended or self.final_at
                if ended is None and now >= next_check:
                    next_check = now + CLOSE_CHECK_SECONDS
                    ended = await self._ended()
                # Events come best-effort and out of order (an activity's last one may follow
                # the workflow's end): the stream ends once it read past a grace period.
                # Counted from what the read could see (a settled read lags behind now).
                if ended is not None and read_at - self.lag - ended >= GRACE:
                    return
            if now - last_sent >= KEEPALIVE_SECONDS:
                last_sent = now
                yield KEEPALIVE
            await asyncio.sleep(POLL_SECONDS)
