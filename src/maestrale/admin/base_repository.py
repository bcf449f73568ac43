"""The base of the admin repositories: every query is scoped to the admin key's organization by
construction, so an id of another organization is simply not found."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.db import Base

RowT = TypeVar("RowT", bound=Base)


def contains(value: str) -> str:
    """A case-insensitive LIKE pattern (escape `\\`) matching values that contain `value`."""
    escaped = value.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class OrganizationRepository:
    def __init__(self, session: AsyncSession, organization_id: str) -> None:
        self.session = session
        self.organization_id = organization_id

    async def count(self, stmt: Select[*tuple[Any, ...]]) -> int:
        sub = stmt.order_by(None).subquery()
        return int((await self.session.execute(select(func.count()).select_from(sub))).scalar_one())

    async def add(self, row: RowT) -> RowT:
        """Add `row` (if new) and write it now: its defaults, such as the id, are then set."""
        self.session.add(row)
        await self.session.flush()
        return row

    async def delete(self, row: Base) -> None:
        await self.session.delete(row)
        await self.session.flush()

    async def flush(self) -> None:
        """Write the changes made to loaded rows."""
        await self.session.flush()
