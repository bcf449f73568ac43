"""Reads of workflow telemetry: which logs and spans belong to an execution (or a deployment) of
the caller's workspace, and their pages. An unknown execution or deployment is a 404; a known
one without telemetry yet has empty results."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.telemetry.tables import TelemetrySpan
from maestrale.workflows.errors import not_found
from maestrale.workflows.executions.tables import Execution
from maestrale.workflows.telemetry import links
from maestrale.workflows.telemetry.logs import next_cursor, record, to_ns
from maestrale.workflows.telemetry.repository import (
    LogPage,
    LogScope,
    WorkflowTelemetryRepository,
)
from maestrale.workflows.telemetry.schemas import LogSearchOut


def _since(moment: datetime) -> int:
    return to_ns(moment - links.CLOCK_SLACK)


def _match(*pairs: tuple[str, str | None]) -> tuple[tuple[str, str], ...]:
    return tuple((key, value) for key, value in pairs if value is not None)


class WorkflowTelemetryService:
    def __init__(self, session: AsyncSession, tenant: Tenant) -> None:
        self.tenant = tenant
        self.store = WorkflowTelemetryRepository(session, tenant)

    async def execution(self, execution_id: str) -> Execution:
        row = await self.store.execution(execution_id)
        if row is None:
            raise not_found(f"execution {execution_id!r}")
        return row

    async def execution_logs(
        self, execution_id: str, run_id: str | None, activity_id: str | None
    ) -> LogScope:
        """The logs of an execution of the workspace (404 for another's), of one of its runs,
        of one of its activities."""
        row = await self.execution(execution_id)
        match = _match((links.LOG_RUN, run_id), (links.LOG_ACTIVITY, activity_id))
        return LogScope("execution_id", execution_id, match, _since(row.start_time))

    async def deployment_logs(
        self, name: str, worker_name: str | None, workflow_name: str | None
    ) -> LogScope:
        """The logs of a deployment's workers (404 for a deployment the workspace lacks)."""
        deployment = await self.store.deployment(name)
        if deployment is None:
            raise not_found(f"deployment {name!r}")
        match = _match((links.LOG_WORKER, worker_name), (links.LOG_WORKFLOW, workflow_name))
        return LogScope("deployment_name", name, match, _since(deployment.created_at))

    async def page(self, scope: LogScope, page: LogPage, limit: int) -> LogSearchOut:
        rows = await self.store.logs(scope, page, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        return LogSearchOut(
            results=[record(row) for row in rows],
            next_cursor=next_cursor(page, rows[-1]) if more else None,
        )

    async def trace_id(self, execution_id: str, start_time: datetime) -> str | None:
        """The trace of the execution's first span (None before one came)."""
        return await self.store.execution_trace_id(execution_id, _since(start_time))

    async def trace(
        self, execution_id: str, start_time: datetime
    ) -> tuple[str | None, Sequence[TelemetrySpan]]:
        """The execution's trace id and spans (None and none before its first span came)."""
        trace_id = await self.trace_id(execution_id, start_time)
        if trace_id is None:
            return None, []
        return trace_id, await self.store.trace_spans(trace_id)
