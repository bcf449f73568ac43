"""SQL of the runs listing: the execution index of the caller's workspace, filtered, in keyset
pages (start or end time, then id) that stay cheap at any depth."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from maestrale.core.db import UTCDateTime
from maestrale.workflows.executions.repository import ExecutionRepository
from maestrale.workflows.executions.tables import Execution
from maestrale.workflows.registry.tables import Workflow
from maestrale.workflows.runs.schemas import RunFilters, SortBy

# The end time a run that has not ended sorts by: after every real one (newest when
# descending), so that the key of every row is a datetime and a page token can hold it.
OPEN_END = datetime(9999, 12, 31, tzinfo=UTC)


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def sort_key(sort_by: SortBy) -> sa.ColumnElement[datetime]:
    if sort_by == "end_time":
        return sa.func.coalesce(Execution.end_time, sa.literal(OPEN_END, UTCDateTime()))
    return Execution.start_time  # type: ignore[return-value]


def key_of(row: Execution, sort_by: SortBy) -> datetime:
    if sort_by == "end_time":
        return row.end_time or OPEN_END
    return row.start_time


class RunRepository(ExecutionRepository):
    def _workflows(self) -> sa.Select[Any]:
        return sa.select(Workflow.id).where(Workflow.workspace_id == self.tenant.workspace_id)

    async def _tagged(self, tags: tuple[str, ...]) -> list[str]:
        # Tags (all of them) are matched here: JSON containment differs per database, and a
        # workspace's workflows are few.
        stmt = sa.select(Workflow.id, Workflow.tags).where(
            Workflow.workspace_id == self.tenant.workspace_id
        )
        wanted = set(tags)
        rows = (await self.session.execute(stmt)).all()
        return [id_ for id_, have in rows if wanted <= set(have or [])]

    async def page(
        self,
        filters: RunFilters,
        *,
        sort_by: SortBy,
        descending: bool,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Execution]:
        """Up to `limit` rows matching `filters`, after the row keyed `after`."""
        stmt = self.select()
        f = filters
        if f.workflow_identifier is not None:
            stmt = stmt.where(
                sa.or_(
                    Execution.workflow_name == f.workflow_identifier,
                    Execution.workflow_id == f.workflow_identifier,
                )
            )
        if f.root_execution_id is not None:
            stmt = stmt.where(Execution.root_execution_id == f.root_execution_id)
        if f.search:
            pattern = _like(f.search)
            named = self._workflows().where(Workflow.display_name.ilike(pattern, escape="\\"))
            stmt = stmt.where(
                sa.or_(
                    Execution.workflow_name.ilike(pattern, escape="\\"),
                    Execution.id.ilike(pattern, escape="\\"),
                    Execution.workflow_id.in_(named),
                )
            )
        if f.statuses:
            stmt = stmt.where(Execution.status.in_(list(f.statuses)))
        if f.deployment_name is not None:
            stmt = stmt.where(Execution.deployment_name == f.deployment_name)
        if f.start_time_after is not None:
            stmt = stmt.where(Execution.start_time >= f.start_time_after)
        if f.start_time_before is not None:
            stmt = stmt.where(Execution.start_time <= f.start_time_before)
        # A run with no end time matches no end-time bound (NULL compares false).
        if f.end_time_after is not None:
            stmt = stmt.where(Execution.end_time >= f.end_time_after)
        if f.end_time_before is not None:
            stmt = stmt.where(Execution.end_time <= f.end_time_before)
        if f.user_id is not None:
            stmt = stmt.where(Execution.user_id == f.user_id)
        if f.workflow_tags:
            stmt = stmt.where(Execution.workflow_id.in_(await self._tagged(f.workflow_tags)))
        if not f.include_internal:
            technical = self._workflows().where(Workflow.is_technical.is_(True))
            stmt = stmt.where(
                sa.or_(Execution.workflow_id.is_(None), Execution.workflow_id.not_in(technical))
            )
        key = sort_key(sort_by)
        if after is not None:
            value, id_ = after
            if descending:
                stmt = stmt.where(sa.or_(key < value, sa.and_(key == value, Execution.id < id_)))
            else:
                stmt = stmt.where(sa.or_(key > value, sa.and_(key == value, Execution.id > id_)))
        if descending:
            stmt = stmt.order_by(key.desc(), Execution.id.desc())
        else:
            stmt = stmt.order_by(key.asc(), Execution.id.asc())
        return await self.list(stmt.limit(limit))
