"""Repository bases. A workspace repository is built from a Tenant and scopes every query to it,
so no query of a domain can forget the workspace (a foreign id simply is not found)."""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from sqlalchemy import ForeignKey, Select, String, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, declared_attr, mapped_column

from maestrale.core.auth.principal import Tenant


class WorkspaceScoped:
    """Mixin for rows owned by a workspace (and so by its organization)."""

    @declared_attr
    def organization_id(cls) -> Mapped[str]:
        return mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))

    @declared_attr
    def workspace_id(cls) -> Mapped[str]:
        return mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"), index=True)

    id: Mapped[str] = mapped_column(String(200), primary_key=True)


M = TypeVar("M", bound=WorkspaceScoped)


class WorkspaceRepository(Generic[M]):
    model: ClassVar[type[Any]]

    def __init__(self, session: AsyncSession, tenant: Tenant) -> None:
        self.session = session
        self.tenant = tenant

    def select(self) -> Select[M]:
        """The base statement of every read: the model's rows of this workspace only."""
        return select(self.model).where(self.model.workspace_id == self.tenant.workspace_id)

    async def get(self, id_: str) -> M | None:
        row: M | None = (
            await self.session.execute(self.select().where(self.model.id == id_))
        ).scalar_one_or_none()
        return row

    async def list(self, stmt: Select[M] | None = None) -> list[M]:
        return list((await self.session.execute(self.select() if stmt is None else stmt)).scalars())

    async def count(self, stmt: Select[M] | None = None) -> int:
        base = (self.select() if stmt is None else stmt).order_by(None).subquery()
        return int(
            (await self.session.execute(select(func.count()).select_from(base))).scalar_one()
        )

    async def add(self, row: M) -> M:
        row.organization_id = self.tenant.organization_id
        row.workspace_id = self.tenant.workspace_id
        self.session.add(row)
        await self.session.flush()
        return row

    async def add_unique(self, row: M) -> bool:
        """Insert `row`; False when a unique key of its table refuses it (a name or slug taken in
        the workspace), the session left as it was."""
        try:
            async with self.session.begin_nested():
                await self.add(row)
        except IntegrityError:
            return False
        return True

    async def delete(self, row: M) -> None:
        if row.workspace_id != self.tenant.workspace_id:
            raise PermissionError("row of another workspace")
        await self.session.delete(row)
        await self.session.flush()
