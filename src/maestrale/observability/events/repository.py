"""All SQL of chat completion events, scoped to the caller's workspace."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, desc, func, select

from maestrale.accounting.tables import ChatCompletionEvent as E
from maestrale.core.auth.principal import Tenant
from maestrale.core.budget import StatementTimeout, statement_budget
from maestrale.core.db import Database
from maestrale.core.pagination import keyset_after
from maestrale.observability.budget import DEFAULT_BUDGET, SearchRepository, search_budget
from maestrale.observability.fields import FieldSpec
from maestrale.observability.filters import extra_string

MAX_OPTIONS = 100
FIELD_SAMPLE = 1000
# Options of unindexed fields come from the workspace's latest events only (bounded cost).
OPTION_WINDOW = 10_000
# Columns indexed right after workspace_id (ix_cce_ws_model_created): exact options, cheaply.
INDEXED_OPTIONS = frozenset({"model"})
# search-ids: ids per database fetch and per chunk of the response body.
ID_CHUNK = 2000
# SQLite, filters on the messages' text: how long the newest events are walked and checked one
# by one (compile_scan) before the search turns to the full-text index instead.
SCAN_PROBE_SECONDS = 0.1


class ChatCompletionEventRepository(SearchRepository):
    """Events of the tenant's workspace. Searches (a WHERE compiled from filters) each run
    within `budget` seconds, past which they fail with a 408 (DATABASE_TIMEOUT)."""

    def select(self) -> Select[E]:
        return select(E).where(E.workspace_id == self.tenant.workspace_id)

    async def get(self, event_id: str) -> E | None:
        stmt = self.select().where(E.id == event_id)
        row: E | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return row

    async def by_ids(self, event_ids: Sequence[str]) -> list[E]:
        """The events of these ids found in the workspace, in no particular order."""
        stmt = self.select().where(E.id.in_(list(event_ids)))
        return list((await self.session.execute(stmt)).scalars())

    async def found_ids(self, event_ids: Sequence[str]) -> set[str]:
        """Which of these ids are events of the workspace."""
        stmt = select(E.id).where(
            E.workspace_id == self.tenant.workspace_id, E.id.in_(list(event_ids))
        )
        return set((await self.session.execute(stmt)).scalars())

    async def newest_ids(
        self, where: ColumnElement[bool], limit: int, *, scan: ColumnElement[bool] | None = None
    ) -> list[str]:
        """The ids of the newest `limit` events matching `where`, newest first (`scan`: see
        `search`)."""

        def query(condition: ColumnElement[bool]) -> Select[str]:
            return (
                select(E.id)
                .where(E.workspace_id == self.tenant.workspace_id, condition)
                .order_by(desc(E.created_at), desc(E.id))
                .limit(limit)
            )

        return list(await self._newest(query(where), None if scan is None else query(scan)))

    async def search(
        self,
        where: ColumnElement[bool],
        limit: int,
        after: tuple[datetime, str] | None,
        *,
        scan: ColumnElement[bool] | None = None,
    ) -> list[E]:
        """A page of the newest events matching `where` after the cursor. `scan`, the same
        filter checked event by event (compile_scan), is tried first for a moment: it fills
        the page at once when the text it looks for is common, and gives way to `where` and
        its full-text index when the text is rare."""

        def query(condition: ColumnElement[bool]) -> Select[E]:
            stmt = self.select().where(condition)
            if after is not None:
                # The redundant bound on created_at alone lets both planners seek the index to
                # the cursor (the OR of keyset_after is otherwise only a filter over the newer
                # rows).
                stmt = stmt.where(
                    E.created_at <= after[0],
                    keyset_after([E.created_at, E.id], list(after), descending=True),
                )
            return stmt.order_by(desc(E.created_at), desc(E.id)).limit(limit)

        return list(await self._newest(query(where), None if scan is None else query(scan)))

    async def _newest(self, stmt: Select[Any], scan: Select[Any] | None) -> Sequence[Any]:
        budget = self.budget
        if scan is not None:
            started = time.monotonic()
            try:
                async with statement_budget(self.session, min(SCAN_PROBE_SECONDS, budget)):
                    rows: Sequence[Any] = (await self.session.execute(scan)).scalars().all()
                    return rows
            except StatementTimeout:
                # The probe's time counts against the search's budget.
                budget = max(budget - (time.monotonic() - started), 1e-6)
        async with search_budget(self.session, budget, total=self.budget):
            rows = (await self.session.execute(stmt)).scalars().all()
            return rows

    async def extra_samples(self) -> list[dict[str, Any]]:
        stmt = (
            select(E.extra_fields)
            .where(E.workspace_id == self.tenant.workspace_id)
            .order_by(desc(E.created_at))
            .limit(FIELD_SAMPLE)
        )
        return [row or {} for row in (await self.session.execute(stmt)).scalars()]

    def _value(self, spec: FieldSpec) -> Any:
        if spec.column is not None:
            return getattr(E, spec.column)
        return extra_string(spec.extra_key or "", self.dialect)

    async def options(self, spec: FieldSpec) -> list[str]:
        """The field's distinct values (at most MAX_OPTIONS, in order). A column led by an index
        after workspace_id is read exactly with a loose index scan (one seek per value); other
        fields, whose values sit in every row, from the latest OPTION_WINDOW events only, so the
        cost stays bounded whatever the workspace's size."""
        if spec.column in INDEXED_OPTIONS:
            return await self._indexed_options(getattr(E, spec.column))
        value = self._value(spec)
        stmt = (
            select(value)
            .where(E.workspace_id == self.tenant.workspace_id, value.is_not(None))
            .distinct()
            .order_by(value)
            .limit(MAX_OPTIONS)
        )
        since = await self._window_start()
        if since is not None:
            stmt = stmt.where(E.created_at >= since)
        async with search_budget(self.session, self.budget):
            return [str(v) for v in (await self.session.execute(stmt)).scalars()]

    async def _window_start(self) -> datetime | None:
        """The created_at of the OPTION_WINDOW-th newest event (None when fewer): a separate
        query, so the options query gets a plain range the planners seek on the index."""
        stmt = (
            select(E.created_at)
            .where(E.workspace_id == self.tenant.workspace_id)
            .order_by(desc(E.created_at))
            .offset(OPTION_WINDOW - 1)
            .limit(1)
        )
        since: datetime | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return since

    async def _indexed_options(self, col: Any) -> list[str]:
        # WITH RECURSIVE v AS (min(col) UNION ALL (SELECT min(col) WHERE col > v)): the
        # "loose index scan" both SQLite and Postgres plan as one index seek per distinct value.
        ws = E.workspace_id == self.tenant.workspace_id
        values = select(func.min(col).label("v")).where(ws).cte("option_values", recursive=True)
        following = select(func.min(col)).where(ws, col > values.c.v).scalar_subquery()
        values = values.union_all(select(following).where(values.c.v.is_not(None)))
        stmt = select(values.c.v).where(values.c.v.is_not(None)).limit(MAX_OPTIONS)
        return [str(v) for v in (await self.session.execute(stmt)).scalars()]

    async def option_counts(
        self, spec: FieldSpec, where: ColumnElement[bool]
    ) -> list[tuple[str, int]]:
        value = self._value(spec)
        count = func.count().label("n")
        stmt = (
            select(value.label("v"), count)
            .where(E.workspace_id == self.tenant.workspace_id, value.is_not(None), where)
            .group_by(value)
            .order_by(desc(count), value)
            .limit(MAX_OPTIONS)
        )
        async with search_budget(self.session, self.budget):
            return [(str(v), int(n)) for v, n in (await self.session.execute(stmt)).all()]


async def stream_ids(
    db: Database,
    tenant: Tenant,
    where: ColumnElement[bool],
    chunk: int | None = None,
    *,
    budget: float = DEFAULT_BUDGET,
) -> AsyncGenerator[list[str]]:
    """Every matching id, newest first, in chunks of `chunk` read from a server-side cursor
    (Postgres) or a stepped statement (SQLite): never the whole list in memory. Each chunk is
    read within `budget` seconds (the reader's pace between chunks does not count)."""
    size = chunk or ID_CHUNK
    stmt = (
        select(E.id)
        .where(E.workspace_id == tenant.workspace_id, where)
        .order_by(desc(E.created_at), desc(E.id))
        .execution_options(yield_per=size)
    )
    async with db.transaction() as work, search_budget(work.session, budget) as limit:
        result = await work.session.stream_scalars(stmt)
        async for part in result.partitions(size):
            yield list(part)
            limit.renew()
