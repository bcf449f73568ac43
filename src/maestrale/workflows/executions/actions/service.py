"""Acting on executions: cancel, terminate, reset (one or a batch), signals, queries, updates
and the event history.

Every action first finds the execution in the caller's workspace (another workspace's is not
found, as an unknown one), calls Temporal, then writes what Temporal then says of the execution
into the index. The request's engine ends the transaction before each call (docs/architecture.md §3:
no transaction across a Temporal call).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from maestrale.workflows.errors import NOT_RUNNING, WorkflowError, not_found
from maestrale.workflows.executions.actions.schemas import (
    BatchOut,
    BatchResult,
    HandlerCall,
    QueryOut,
    ResetRequest,
    UpdateOut,
)
from maestrale.workflows.executions.service import ExecutionService
from maestrale.workflows.executions.sync import CONCURRENCY, observe, record, snapshot
from maestrale.workflows.executions.tables import Execution, ExecutionStatus
from maestrale.workflows.temporal.control import INVALID, TemporalControl

# Execution ids are at most 256 characters (the execute request's bound): a longer one names
# nothing, and is not worth a query.
MAX_ID = 256


def not_running(execution_id: str) -> WorkflowError:
    return WorkflowError(f"execution {execution_id} is not running", NOT_RUNNING, status_code=409)


class ExecutionActions:
    """The actions, with the collaborators of the request's `ExecutionService`."""

    def __init__(self, service: ExecutionService) -> None:
        self.service = service
        self.temporal = TemporalControl(service.engine)

    @property
    def timeout(self) -> float:
        """How long a query or an update may wait for a worker to answer."""
        return self.service.settings.wait_seconds

    async def owned(self, execution_id: str) -> Execution:
        if len(execution_id) > MAX_ID:
            raise not_found(f"execution {execution_id[:64]!r}...")
        return await self.service.row(execution_id)

    async def _sync(self, rows: list[Execution]) -> None:
        """Ask Temporal for the state of `rows` (no transaction open meanwhile), then record
        it."""
        before = snapshot(rows)
        observed = await observe(self.temporal, list(before))
        await record(self.service.executions, observed, before)

    # -- cancel, terminate, reset ------------------------------------------------------------

    async def _cancel(self, execution_id: str) -> None:
        # Temporal accepts a cancel request for a closed execution (a no-op): ask first, so
        # that cancelling what has ended is the 409 the platform answers.
        described = await self.temporal.engine.describe(execution_id)
        if described.status in ExecutionStatus.CLOSED:
            raise not_running(execution_id)
        await self.temporal.cancel(execution_id)

    async def cancel(self, execution_id: str) -> None:
        row = await self.owned(execution_id)
        await self._cancel(execution_id)
        await self._sync([row])

    async def terminate(self, execution_id: str, reason: str | None) -> None:
        row = await self.owned(execution_id)
        await self.temporal.terminate(execution_id, reason)
        await self._sync([row])

    async def reset(self, execution_id: str, body: ResetRequest) -> str:
        """Reset the execution's latest run; the new run's id."""
        row = await self.owned(execution_id)
        run_id = await self.temporal.reset(
            execution_id,
            body.event_id,
            reason=body.reason,
            exclude_signals=body.exclude_signals,
            exclude_updates=body.exclude_updates,
        )
        await self._sync([row])
        return run_id

    async def batch(self, execution_ids: list[str], action: str) -> BatchOut:
        """`action` ("cancel" or "terminate") on each id; each gets its own outcome, and one
        that fails (unknown, another workspace's, closed) never fails the others."""
        ids = list(dict.fromkeys(execution_ids))
        candidates = [i for i in ids if len(i) <= MAX_ID]
        executions = self.service.executions
        rows = (
            await executions.list(executions.select().where(Execution.id.in_(candidates)))
            if candidates
            else []
        )
        owned = {row.id for row in rows}

        async def terminate(execution_id: str) -> None:
            await self.temporal.terminate(execution_id, "batch terminate")

        act: Callable[[str], Awaitable[None]] = self._cancel if action == "cancel" else terminate
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(execution_id: str) -> BatchResult:
            if execution_id not in owned:
                return BatchResult(status="failure", error=f"execution {execution_id} not found")
            async with gate:
                try:
                    await act(execution_id)
                except WorkflowError as exc:
                    return BatchResult(status="failure", error=exc.message)
            return BatchResult(status="success")

        outcomes = await asyncio.gather(*(one(i) for i in ids))
        results = dict(zip(ids, outcomes, strict=True))
        done = [row for row in rows if results[row.id].status == "success"]
        if done:
            await self._sync(done)
        return BatchOut(results=results)

    # -- signals, queries, updates, history ---------------------------------------------------

    async def _check_signal(self, row: Execution, name: str) -> None:
        """Refuse a signal the workflow does not declare. Temporal would accept it and the
        workflow would drop it unseen; a registration that lists signals lists them all (the
        official worker sends every handler of the class), one that lists none may just not
        describe them, so it is not held against the caller."""
        if row.workflow_id is None:
            return
        pairs = await self.service.registry.registrations(
            workflow_ids=[row.workflow_id],
            deployment_name=row.deployment_name,
            latest_only=True,
        )
        if not pairs:
            return
        declared = {
            str(handler.get("name"))
            for handler in pairs[0][0].definition.get("signals") or []
            if isinstance(handler, dict)
        }
        if declared and name not in declared:
            raise WorkflowError(
                f"workflow {row.workflow_name!r} has no signal {name!r}"
                f" (it has {', '.join(sorted(declared))})",
                INVALID,
                status_code=400,
            )

    async def signal(self, execution_id: str, call: HandlerCall) -> None:
        row = await self.owned(execution_id)
        await self._check_signal(row, call.name)
        await self.temporal.signal(execution_id, call.name, call.input)

    async def query(self, execution_id: str, call: HandlerCall) -> QueryOut:
        await self.owned(execution_id)
        result = await self.temporal.query(execution_id, call.name, call.input, self.timeout)
        return QueryOut(query_name=call.name, result=result)

    async def update(self, execution_id: str, call: HandlerCall) -> UpdateOut:
        await self.owned(execution_id)
        result = await self.temporal.update(execution_id, call.name, call.input, self.timeout)
        return UpdateOut(update_name=call.name, result=result)

    async def history(self, execution_id: str, decode_payloads: bool) -> dict[str, Any]:
        """The event history of the execution's latest run."""
        await self.owned(execution_id)
        return await self.temporal.history(execution_id, decode_payloads=decode_payloads)
