"""The SQL of a field's options: its distinct values among the workspace's latest records."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from maestrale.observability.budget import SearchRepository, search_budget
from maestrale.telemetry.search.model import Entity, Field

# Options come from this many of the latest records (within the requested time range), so the
# cost of a list stays bounded whatever the workspace's size, and at most MAX_OPTIONS of them.
OPTION_WINDOW = 10_000
MAX_OPTIONS = 100


class FieldOptionsRepository(SearchRepository):
    async def options(
        self, entity: Entity, field: Field, start: int | None, end: int | None
    ) -> list[str]:
        """The field's distinct non-empty values among the latest OPTION_WINDOW records of the
        time range, the most recently seen first (then in order)."""
        latest = select(field.column.label("value"), entity.time.label("seen")).where(
            entity.workspace == self.tenant.workspace_id
        )
        if start is not None:
            latest = latest.where(entity.time >= start)
        if end is not None:
            latest = latest.where(entity.time < end)
        window = latest.order_by(entity.time.desc()).limit(OPTION_WINDOW).subquery()
        value: Any = window.c.value
        last_seen = func.max(window.c.seen)
        stmt = (
            select(value)
            .where(value.is_not(None), value != "")
            .group_by(value)
            .order_by(last_seen.desc(), value)
            .limit(MAX_OPTIONS)
        )
        async with search_budget(self.session, self.budget):
            return [str(v) for v in (await self.session.execute(stmt)).scalars()]
