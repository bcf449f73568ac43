"""SQL of schedule owners: which workspace a Temporal schedule belongs to, and its spec as
written. A schedule id is unique across workspaces (it is Temporal's, one namespace for all)."""

from __future__ import annotations

import sqlalchemy as sa

from maestrale.core.repository import WorkspaceRepository
from maestrale.workflows.registry.tables import Workflow
from maestrale.workflows.schedules.tables import Schedule


class ScheduleRepository(WorkspaceRepository[Schedule]):
    model = Schedule

    async def taken(self, schedule_id: str) -> bool:
        """Whether any workspace holds `schedule_id`."""
        stmt = sa.select(Schedule.id).where(Schedule.id == schedule_id)
        return (await self.session.execute(stmt)).first() is not None

    async def page(
        self,
        *,
        after: str | None,
        limit: int,
        workflow_name: str | None,
        user_id: str | None,
        search: str | None = None,
    ) -> list[Schedule]:
        """The workspace's schedules by id, after `after`; `search` keeps those of the
        workflows whose name starts with it (case-insensitive)."""
        stmt = self.select().order_by(Schedule.id).limit(limit)
        if after is not None:
            stmt = stmt.where(Schedule.id > after)
        if user_id is not None:
            stmt = stmt.where(Schedule.user_id == user_id)
        if workflow_name is not None:
            named = sa.select(Workflow.id).where(
                Workflow.workspace_id == self.tenant.workspace_id, Workflow.name == workflow_name
            )
            stmt = stmt.where(Schedule.workflow_id.in_(named))
        if search:
            prefix = Workflow.name.istartswith(search, autoescape=True)
            matching = sa.select(Workflow.id).where(
                Workflow.workspace_id == self.tenant.workspace_id, prefix
            )
            stmt = stmt.where(Schedule.workflow_id.in_(matching))
        return await self.list(stmt)
