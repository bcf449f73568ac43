"""All SQL of chat completion events, scoped to the caller's workspace."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, desc, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.db import Database
from maestrale.core.pagination import keyset_after
from maestrale.observability.fields import FieldSpec
from maestrale.observability.filters import extra_string
from maestrale.observability.tables import ChatCompletionEvent as E

MAX_OPTIONS = 100
FIELD_SAMPLE = 1000


class EventRepository:
    def __init__(self, session: AsyncSession, tenant: Tenant) -> None:
        self.session = session
        self.tenant = tenant

    @property
    def dialect(self) -> str:
        bind = self.session.get_bind()
        return bind.dialect.name

    def select(self) -> Select[E]:
        return select(E).where(E.workspace_id == self.tenant.workspace_id)

    async def get(self, event_id: str) -> E | None:
        stmt = self.select().where(E.id == event_id)
        row: E | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return row

    async def search(
        self, where: ColumnElement[bool], limit: int, after: tuple[datetime, str] | None
    ) -> list[E]:
        stmt = self.select().where(where)
        if after is not None:
            stmt = stmt.where(keyset_after([E.created_at, E.id], list(after), descending=True))
        stmt = stmt.order_by(desc(E.created_at), desc(E.id)).limit(limit)
        return list((await self.session.execute(stmt)).scalars())

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
        value = self._value(spec)
        stmt = (
            select(value)
            .where(E.workspace_id == self.tenant.workspace_id, value.is_not(None))
            .distinct()
            .order_by(value)
            .limit(MAX_OPTIONS)
        )
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
        return [(str(v), int(n)) for v, n in (await self.session.execute(stmt)).all()]


async def stream_ids(
    db: Database, tenant: Tenant, where: ColumnElement[bool]
) -> AsyncIterator[str]:
    """Every matching id, newest first, streamed from the database (never held in memory)."""
    stmt = (
        select(E.id)
        .where(E.workspace_id == tenant.workspace_id, where)
        .order_by(desc(E.created_at), desc(E.id))
        .execution_options(yield_per=1000)
    )
    async with db.sessionmaker() as session:
        result = await session.stream_scalars(stmt)
        async for event_id in result:
            yield event_id
