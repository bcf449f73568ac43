"""Bringing index rows up to date with Temporal, several executions at a time (after a batch
action, for a page of runs).

The caller reads its rows, then `observe` asks Temporal (a few calls at a time, none with a
transaction open: the request's engine ends it first, docs/architecture.md §3); `record` writes what
was seen in a short transaction, skipping a row that moved meanwhile (another request wrote a newer
state).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from maestrale.core.clock import utcnow
from maestrale.workflows.errors import WorkflowError
from maestrale.workflows.executions.repository import ExecutionRepository
from maestrale.workflows.executions.tables import Execution, ExecutionStatus
from maestrale.workflows.temporal.control import TemporalControl
from maestrale.workflows.temporal.engine import Described

log = logging.getLogger("maestrale.workflows.executions")

# Temporal calls in flight per request: enough to refresh a page quickly, few enough that one
# listing does not flood the frontend.
CONCURRENCY = 8


@dataclass(frozen=True, slots=True)
class Observed:
    described: Described
    result: Any


def snapshot(rows: list[Execution]) -> dict[str, tuple[str, str | None]]:
    """What each row said when read: `record` writes only over a row still saying it."""
    return {row.id: (row.status, row.run_id) for row in rows}


async def observe(
    control: TemporalControl, execution_ids: list[str], concurrency: int = CONCURRENCY
) -> dict[str, Observed]:
    """Temporal's state of each execution (and the result of a completed one). One Temporal
    cannot answer for: left out, its row keeps what the index knew (a listing still works with
    Temporal down)."""
    gate = asyncio.Semaphore(concurrency)

    async def one(execution_id: str) -> tuple[str, Observed | None]:
        async with gate:
            try:
                described = await control.engine.describe(execution_id)
                result = None
                if described.status == ExecutionStatus.COMPLETED:
                    result = await control.engine.outcome(execution_id, described.run_id)
            except WorkflowError as exc:
                log.info("cannot refresh execution %s: %s", execution_id, exc.message)
                return execution_id, None
            return execution_id, Observed(described, result)

    found = await asyncio.gather(*(one(execution_id) for execution_id in execution_ids))
    return {execution_id: seen for execution_id, seen in found if seen is not None}


async def record(
    executions: ExecutionRepository,
    observed: dict[str, Observed],
    before: dict[str, tuple[str, str | None]],
) -> None:
    """Write what was observed over the rows that did not move since `before`."""
    if not observed:
        return
    rows = await executions.list(executions.select().where(Execution.id.in_(list(observed))))
    now = utcnow()
    for row in rows:
        if row.id in before and (row.status, row.run_id) != before[row.id]:
            continue
        seen = observed[row.id]
        row.status = seen.described.status
        row.run_id = seen.described.run_id
        row.end_time = seen.described.close_time
        row.result = seen.result
        row.updated_at = now
    await executions.session.flush()
