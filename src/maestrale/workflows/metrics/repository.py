"""SQL of a workflow's metrics: its executions in the index, scoped to the caller's workspace."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from maestrale.core.repository import WorkspaceRepository
from maestrale.workflows.executions.tables import Execution


class MetricsRepository(WorkspaceRepository[Execution]):
    model = Execution

    def _window(
        self, workflow_name: str, after: datetime | None, before: datetime | None
    ) -> list[sa.ColumnElement[bool]]:
        conditions = [
            Execution.workspace_id == self.tenant.workspace_id,
            Execution.workflow_name == workflow_name,
        ]
        if after is not None:
            conditions.append(Execution.start_time >= after)
        if before is not None:
            conditions.append(Execution.start_time <= before)
        return conditions

    async def status_counts(
        self, workflow_name: str, after: datetime | None, before: datetime | None
    ) -> dict[str, int]:
        """How many of the workflow's executions started in the window, by status."""
        stmt = (
            sa.select(Execution.status, sa.func.count())
            .where(*self._window(workflow_name, after, before))
            .group_by(Execution.status)
        )
        return {status: int(n) for status, n in (await self.session.execute(stmt)).all()}

    async def closed_spans(
        self, workflow_name: str, after: datetime | None, before: datetime | None
    ) -> list[tuple[datetime, datetime]]:
        """(start, end) of the workflow's closed executions started in the window, by start."""
        stmt = (
            sa.select(Execution.start_time, Execution.end_time)
            .where(*self._window(workflow_name, after, before), Execution.end_time.is_not(None))
            .order_by(Execution.start_time)
        )
        rows = (await self.session.execute(stmt)).all()
        return [(start, end) for start, end in rows if end is not None]
