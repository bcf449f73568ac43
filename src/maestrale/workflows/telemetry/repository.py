"""SQL of workflow telemetry: the logs and spans of an execution or of a deployment's workers,
read from the telemetry store, always within the caller's workspace. The worker ties them to an
execution or a deployment by attributes only (`links`), so these reads filter a JSON attribute
within a time range of the (workspace, time) indexes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.pagination import keyset_after
from maestrale.telemetry.search.jsonvalue import json_text
from maestrale.telemetry.tables import TelemetryLog, TelemetrySpan
from maestrale.workflows.executions.tables import Execution
from maestrale.workflows.registry.tables import Deployment

# A trace read whole stops there: a runaway workflow must not build an unbounded answer.
MAX_TRACE_SPANS = 5000


@dataclass(frozen=True, slots=True)
class LogScope:
    """Which logs: an execution's or a deployment's (their indexed columns), those whose
    `attributes` also hold each of `match` (key → value), from `since_ns` on (the time bound of
    the index range)."""

    column: Literal["execution_id", "deployment_name"]
    value: str
    match: tuple[tuple[str, str], ...]
    since_ns: int


@dataclass(frozen=True, slots=True)
class LogPage:
    """A window (`after_ns` ≤ time < `before_ns`) read in `order`, past a keyset position
    (`position`: the time and id of the last row of the previous page)."""

    order: str = "asc"
    after_ns: int | None = None
    before_ns: int | None = None
    position: tuple[int, int] | None = None


class WorkflowTelemetryRepository:
    def __init__(self, session: AsyncSession, tenant: Tenant) -> None:
        self.session = session
        self.tenant = tenant

    async def execution(self, execution_id: str) -> Execution | None:
        stmt = sa.select(Execution).where(
            Execution.id == execution_id, Execution.workspace_id == self.tenant.workspace_id
        )
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def deployment(self, name: str) -> Deployment | None:
        stmt = sa.select(Deployment).where(
            Deployment.name == name, Deployment.workspace_id == self.tenant.workspace_id
        )
        return (await self.session.execute(stmt)).scalar_one_or_none()

    def _log_conditions(self, scope: LogScope) -> list[sa.ColumnElement[bool]]:
        conditions: list[sa.ColumnElement[bool]] = [
            TelemetryLog.workspace_id == self.tenant.workspace_id,
            getattr(TelemetryLog, scope.column) == scope.value,
            TelemetryLog.timestamp_ns >= scope.since_ns,
        ]
        conditions += [json_text(TelemetryLog.attributes, k) == v for k, v in scope.match]
        return conditions

    async def logs(self, scope: LogScope, page: LogPage, limit: int) -> list[TelemetryLog]:
        """Up to `limit` logs of the page, by time then id in the page's order."""
        conditions = self._log_conditions(scope)
        if page.after_ns is not None:
            conditions.append(TelemetryLog.timestamp_ns >= page.after_ns)
        if page.before_ns is not None:
            conditions.append(TelemetryLog.timestamp_ns < page.before_ns)
        descending = page.order == "desc"
        if page.position is not None:
            columns = [TelemetryLog.timestamp_ns, TelemetryLog.id]
            conditions.append(keyset_after(columns, list(page.position), descending=descending))
        keys = (TelemetryLog.timestamp_ns, TelemetryLog.id)
        order = [key.desc() for key in keys] if descending else list(keys)
        stmt = sa.select(TelemetryLog).where(*conditions).order_by(*order).limit(limit)
        return list((await self.session.execute(stmt)).scalars())

    async def logs_after(
        self, scope: LogScope, after_id: int, from_ns: int | None, limit: int
    ) -> list[TelemetryLog]:
        """Up to `limit` logs stored after row `after_id`, in arrival (id) order: a stream's."""
        conditions = self._log_conditions(scope)
        if from_ns is not None:
            conditions.append(TelemetryLog.timestamp_ns >= from_ns)
        stmt = (
            sa.select(TelemetryLog)
            .where(TelemetryLog.id > after_id, *conditions)
            .order_by(TelemetryLog.id)
            .limit(limit)
        )
        return list((await self.session.execute(stmt)).scalars())

    async def execution_trace_id(self, execution_id: str, since_ns: int) -> str | None:
        """The trace of the execution's first span (its workflow's spans all share it)."""
        stmt = (
            sa.select(TelemetrySpan.trace_id)
            .where(
                TelemetrySpan.workspace_id == self.tenant.workspace_id,
                TelemetrySpan.start_ns >= since_ns,
                TelemetrySpan.execution_id == execution_id,
            )
            .order_by(TelemetrySpan.start_ns, TelemetrySpan.id)
            .limit(1)
        )
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def trace_spans(self, trace_id: str) -> Sequence[TelemetrySpan]:
        """The spans of a trace by start (at most MAX_TRACE_SPANS)."""
        stmt = (
            sa.select(TelemetrySpan)
            .where(
                TelemetrySpan.workspace_id == self.tenant.workspace_id,
                TelemetrySpan.trace_id == trace_id,
            )
            .order_by(TelemetrySpan.start_ns, TelemetrySpan.id)
            .limit(MAX_TRACE_SPANS)
        )
        return list((await self.session.execute(stmt)).scalars())
