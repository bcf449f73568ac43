"""SQL of the execution index. Reads are scoped to the caller's workspace; an execution id is
unique across workspaces (it is the Temporal workflow id), so `owner_of` tells whether another
workspace holds an id before this one may reuse it."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from maestrale.core.clock import utcnow
from maestrale.core.repository import WorkspaceRepository
from maestrale.workflows.executions.tables import Execution


class ExecutionRepository(WorkspaceRepository[Execution]):
    model = Execution

    async def owner_of(self, execution_id: str) -> str | None:
        """The workspace that holds `execution_id`, whichever it is."""
        stmt = sa.select(Execution.workspace_id).where(Execution.id == execution_id)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def by_run(self, run_id: str) -> Execution | None:
        stmt = self.select().where(Execution.run_id == run_id)
        return (await self.session.execute(stmt)).scalars().first()

    async def started(self, execution_id: str, **values: Any) -> Execution:
        """Record a new run of `execution_id` in this workspace (an earlier closed run of the
        same id is replaced: Temporal's default id reuse)."""
        now = utcnow()
        row = {
            "id": execution_id,
            "organization_id": self.tenant.organization_id,
            "workspace_id": self.tenant.workspace_id,
            "status": "RUNNING",
            "start_time": now,
            "end_time": None,
            "result": None,
            "updated_at": now,
            **values,
        }
        postgres = self.session.get_bind().dialect.name == "postgresql"
        dialect: Any = postgresql if postgres else sqlite
        insert = dialect.insert(Execution).values(**row)
        update = {k: insert.excluded[k] for k in row if k not in ("id", "organization_id")}
        stmt = (
            insert.on_conflict_do_update(
                index_elements=["id"],
                set_=update,
                where=Execution.workspace_id == self.tenant.workspace_id,
            )
            .returning(Execution)
            .execution_options(populate_existing=True)
        )
        found: Execution | None = (await self.session.execute(stmt)).scalar_one_or_none()
        if found is None:
            raise LookupError(execution_id)  # another workspace took it meanwhile
        return found
