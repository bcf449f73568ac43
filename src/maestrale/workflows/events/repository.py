"""SQL of workflow events: stored once per (workspace, event_id), read back in arrival order
(`seq`), always within the caller's workspace."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.workflows.events.schemas import CLOSING, EventIn
from maestrale.workflows.events.tables import WorkflowEvent
from maestrale.workflows.executions.tables import Execution, ExecutionStatus

# Rows per INSERT: well under SQLite's bound on parameters (13 columns a row).
_CHUNK = 200
# On Postgres, `seq` is taken at insert and seen at commit: a stream could see seq 11 before a
# concurrent batch's seq 10 commits, move its cursor past 10 and never send it. A stream that
# follows new events leaves out those of the last second (batches commit in milliseconds).
# SQLite has one writer at a time, whose rows are seen in `seq` order.
_SETTLE = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class EventFilter:
    """Which events a reader wants; None is any. `lineage` is an execution and every one below
    it (its own events and those whose root it is)."""

    execution_id: str | None = None
    root_execution_id: str | None = None
    run_id: str | None = None
    workflow_name: str | None = None
    event_types: tuple[str, ...] = ()
    lineage: str | None = None


def ns_to_datetime(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, UTC)


class WorkflowEventRepository:
    def __init__(self, session: AsyncSession, tenant: Tenant) -> None:
        self.session = session
        self.tenant = tenant

    def _dialect(self) -> Any:
        return postgresql if self.session.get_bind().dialect.name == "postgresql" else sqlite

    async def foreign_executions(self, execution_ids: Sequence[str]) -> list[str]:
        """Those of `execution_ids` that another workspace holds."""
        stmt = sa.select(Execution.id).where(
            Execution.id.in_(set(execution_ids)),
            Execution.workspace_id != self.tenant.workspace_id,
        )
        return list((await self.session.execute(stmt)).scalars())

    async def add(self, events: Sequence[EventIn]) -> None:
        """Store `events`; one whose event_id this workspace already holds is ignored (a worker
        retries what it is not sure was received)."""
        now = utcnow()
        rows = [
            {
                "organization_id": self.tenant.organization_id,
                "workspace_id": self.tenant.workspace_id,
                "event_id": e.event_id,
                "execution_id": e.workflow_exec_id,
                "root_execution_id": e.root_workflow_exec_id,
                "run_id": e.workflow_run_id,
                "workflow_name": e.workflow_name,
                "event_type": e.event_type,
                "timestamp_ns": e.event_timestamp,
                "body": e.model_dump(mode="json"),
                "received_at": now,
            }
            for e in events
        ]
        insert = self._dialect().insert
        for start in range(0, len(rows), _CHUNK):
            stmt = insert(WorkflowEvent).values(rows[start : start + _CHUNK])
            await self.session.execute(
                stmt.on_conflict_do_nothing(index_elements=["workspace_id", "event_id"])
            )

    async def close_runs(self, events: Sequence[EventIn]) -> None:
        """Copy the end of a run into the index row of its execution, if that row still says
        RUNNING for this run (Temporal stays the authority: a read refreshes from it)."""
        for event in events:
            status = CLOSING.get(event.event_type)
            if status is None:
                continue
            values: dict[str, Any] = {
                "status": status,
                "end_time": ns_to_datetime(event.event_timestamp),
                "updated_at": utcnow(),
            }
            if status == ExecutionStatus.COMPLETED:
                result = event.attributes.get("result")
                # An encoded result (compressed, encrypted, offloaded) is left for the next
                # read to fetch from Temporal, decoded as the execution API answers it.
                if not isinstance(result, dict) or result.get("encoding_options"):
                    continue
                values["result"] = result.get("value")
            await self.session.execute(
                sa.update(Execution)
                .where(
                    Execution.id == event.workflow_exec_id,
                    Execution.workspace_id == self.tenant.workspace_id,
                    Execution.status == ExecutionStatus.RUNNING,
                    sa.or_(Execution.run_id.is_(None), Execution.run_id == event.workflow_run_id),
                )
                .values(**values)
            )

    def _where(self, wanted: EventFilter) -> list[sa.ColumnElement[bool]]:
        conditions: list[sa.ColumnElement[bool]] = [
            WorkflowEvent.workspace_id == self.tenant.workspace_id
        ]
        if wanted.execution_id is not None:
            conditions.append(WorkflowEvent.execution_id == wanted.execution_id)
        if wanted.root_execution_id is not None:
            conditions.append(WorkflowEvent.root_execution_id == wanted.root_execution_id)
        if wanted.run_id is not None:
            conditions.append(WorkflowEvent.run_id == wanted.run_id)
        if wanted.workflow_name is not None:
            conditions.append(WorkflowEvent.workflow_name == wanted.workflow_name)
        if wanted.event_types:
            conditions.append(WorkflowEvent.event_type.in_(wanted.event_types))
        if wanted.lineage is not None:
            conditions.append(
                sa.or_(
                    WorkflowEvent.execution_id == wanted.lineage,
                    WorkflowEvent.root_execution_id == wanted.lineage,
                )
            )
        return conditions

    def settle_lag(self) -> timedelta:
        """How far behind now a settled read sees: on Postgres, sequence numbers of concurrent
        transactions can become visible out of order, so a stream holds back the last second."""
        postgres = self.session.get_bind().dialect.name == "postgresql"
        return _SETTLE if postgres else timedelta(0)

    async def after(
        self, seq: int, wanted: EventFilter, limit: int, *, settled: bool = False
    ) -> list[WorkflowEvent]:
        """Up to `limit` events past position `seq`, in arrival order; `settled`: only those
        that no event of a lower `seq` can still follow (a stream's)."""
        conditions = self._where(wanted)
        if settled and self.settle_lag():
            conditions.append(WorkflowEvent.received_at <= utcnow() - self.settle_lag())
        stmt = (
            sa.select(WorkflowEvent)
            .where(WorkflowEvent.seq > seq, *conditions)
            .order_by(WorkflowEvent.seq)
            .limit(limit)
        )
        return list((await self.session.execute(stmt)).scalars())

    async def last_seq(self) -> int:
        """The position of the newest event of the workspace (0 when it has none)."""
        stmt = sa.select(sa.func.max(WorkflowEvent.seq)).where(
            WorkflowEvent.workspace_id == self.tenant.workspace_id
        )
        return int((await self.session.execute(stmt)).scalar_one_or_none() or 0)

    async def execution(self, execution_id: str) -> Execution | None:
        stmt = sa.select(Execution).where(
            Execution.id == execution_id, Execution.workspace_id == self.tenant.workspace_id
        )
        return (await self.session.execute(stmt)).scalar_one_or_none()
