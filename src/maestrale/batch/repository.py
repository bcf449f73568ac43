"""SQL of batch jobs for API requests, scoped to the caller's workspace."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import ColumnElement, false

from maestrale.batch.tables import BatchJob, BatchResult
from maestrale.core.pagination import PageParams
from maestrale.core.repository import WorkspaceRepository


class BatchRepository(WorkspaceRepository[BatchJob]):
    model = BatchJob

    def created_by(self, key_id: str | None) -> ColumnElement[bool]:
        """Jobs of the caller: of its user, or for a key bound to no user, of that key."""
        if self.tenant.user_id is not None:
            return BatchJob.user_id == self.tenant.user_id
        if key_id is None:
            return false()
        return sa.and_(BatchJob.user_id.is_(None), BatchJob.key_id == key_id)

    async def page(
        self,
        page: PageParams,
        *,
        model: str | None = None,
        agent_id: str | None = None,
        metadata: Mapping[str, str] | None = None,
        created_after: datetime | None = None,
        creator: ColumnElement[bool] | None = None,
        statuses: Sequence[str] = (),
        newest_first: bool = True,
    ) -> tuple[list[BatchJob], int]:
        stmt = self.select()
        if model is not None:
            stmt = stmt.where(BatchJob.model == model)
        if agent_id is not None:
            stmt = stmt.where(BatchJob.agent_id == agent_id)
        for key, value in (metadata or {}).items():
            stmt = stmt.where(BatchJob.meta[key].as_string() == value)
        if created_after is not None:
            stmt = stmt.where(BatchJob.created_at > created_after)
        if creator is not None:
            stmt = stmt.where(creator)
        if statuses:
            stmt = stmt.where(BatchJob.status.in_(list(statuses)))
        total = await self.count(stmt)
        if newest_first:
            ordered = stmt.order_by(BatchJob.created_at.desc(), BatchJob.id.desc())
        else:
            ordered = stmt.order_by(BatchJob.created_at, BatchJob.id)
        return await self.list(ordered.offset(page.offset).limit(page.limit)), total

    async def set_status(self, row: BatchJob, expected: str, **values: Any) -> bool:
        """Move `row` out of status `expected` (a worker may move it concurrently); False if it
        was no longer in that status."""
        changed = await self.session.execute(
            sa.update(BatchJob)
            .where(
                BatchJob.id == row.id,
                BatchJob.workspace_id == self.tenant.workspace_id,
                BatchJob.status == expected,
            )
            .values(**values)
            .returning(BatchJob.id)
            .execution_options(synchronize_session=False)
        )
        done = changed.scalar_one_or_none() is not None
        await self.session.refresh(row)
        return done

    async def reload(self, row: BatchJob) -> BatchJob:
        await self.session.refresh(row)
        return row

    async def results(self, row: BatchJob, limit: int) -> list[BatchResult]:
        """The job's recorded results in line order (for inline answers)."""
        found = await self.session.execute(
            sa.select(BatchResult)
            .where(BatchResult.batch_id == row.id)
            .order_by(BatchResult.line)
            .limit(limit)
        )
        return list(found.scalars())
