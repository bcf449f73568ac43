"""All SQL of the trace, span and log searches and gets, scoped to the caller's workspace. Every
search runs within the group's time budget (408 past it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, asc, desc, func, select

from maestrale.core.pagination import keyset_after
from maestrale.observability.budget import SearchRepository, search_budget
from maestrale.telemetry.search.model import Entity
from maestrale.telemetry.tables import TelemetrySpan, TelemetryTrace


@dataclass(frozen=True, slots=True)
class Page:
    """What a page reads: `where` (compiled from the search expression, or None), a time range
    (nanoseconds, `start` included, `end` excluded), the keyset of the previous page's last row
    and the order (by time, then `key`)."""

    where: ColumnElement[bool] | None
    start: int | None
    end: int | None
    after: tuple[int, Any] | None
    limit: int
    descending: bool = True


class TelemetryRepository(SearchRepository):
    def scoped(self, entity: Entity, start: int | None, end: int | None) -> list[Any]:
        """The conditions every query of `entity` has: the workspace and the time range."""
        conditions: list[Any] = [entity.workspace == self.tenant.workspace_id]
        if start is not None:
            conditions.append(entity.time >= start)
        if end is not None:
            conditions.append(entity.time < end)
        return conditions

    async def page(
        self, entity: Entity, key: Any, page: Page, *extra: ColumnElement[bool]
    ) -> list[Any]:
        """A page of `entity`'s rows in the order of (time, key), after `page.after`."""
        time = entity.time
        stmt = select(entity.table).where(*self.scoped(entity, page.start, page.end), *extra)
        if page.where is not None:
            stmt = stmt.where(page.where)
        if page.after is not None:
            # The redundant bound on time alone lets both planners seek the index to the cursor.
            bound = time <= page.after[0] if page.descending else time >= page.after[0]
            stmt = stmt.where(
                bound,
                keyset_after([time, key], list(page.after), descending=page.descending),  # type: ignore[list-item]
            )
        order = desc if page.descending else asc
        stmt = stmt.order_by(order(time), order(key)).limit(page.limit)
        async with search_budget(self.session, self.budget):
            rows: Sequence[Any] = (await self.session.execute(stmt)).scalars().all()
        return list(rows)

    async def trace(self, trace_id: str) -> TelemetryTrace | None:
        stmt = select(TelemetryTrace).where(
            TelemetryTrace.workspace_id == self.tenant.workspace_id,
            TelemetryTrace.trace_id == trace_id,
        )
        row: TelemetryTrace | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return row

    async def span(
        self, trace_id: str, span_id: str, start: int | None, end: int | None
    ) -> TelemetrySpan | None:
        stmt = select(TelemetrySpan).where(
            TelemetrySpan.workspace_id == self.tenant.workspace_id,
            TelemetrySpan.trace_id == trace_id,
            TelemetrySpan.span_id == span_id,
        )
        if start is not None:
            stmt = stmt.where(TelemetrySpan.start_ns >= start)
        if end is not None:
            stmt = stmt.where(TelemetrySpan.start_ns < end)
        row: TelemetrySpan | None = (await self.session.execute(stmt.limit(1))).scalar_one_or_none()
        return row

    async def has_spans(self, trace_id: str) -> bool:
        stmt = select(TelemetrySpan.id).where(
            TelemetrySpan.workspace_id == self.tenant.workspace_id,
            TelemetrySpan.trace_id == trace_id,
        )
        return (await self.session.execute(stmt.limit(1))).first() is not None

    async def earliest(self, entity: Entity) -> int | None:
        """The earliest time of the workspace's rows of `entity` (one index seek)."""
        stmt = select(func.min(entity.time)).where(entity.workspace == self.tenant.workspace_id)
        value = (await self.session.execute(stmt)).scalar_one_or_none()
        return None if value is None else int(value)
