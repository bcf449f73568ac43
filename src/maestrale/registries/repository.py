"""SQL of the registries. Objects are read through `visible()`: the caller's workspace and kind,
minus the private objects of other users (a foreign or hidden id is simply not found). Versions
and aliases are reached only through an object found that way."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.repository import WorkspaceRepository
from maestrale.registries.tables import RegistryAlias, RegistryObject, RegistryVersion

SortKey = Literal["created_at", "last_modified_at", "name", "title"]


def sort_column(key: SortKey) -> ColumnElement[Any]:
    if key == "created_at":
        return RegistryObject.created_at  # type: ignore[return-value]
    if key == "last_modified_at":
        return RegistryObject.updated_at  # type: ignore[return-value]
    if key == "name":
        return RegistryObject.name  # type: ignore[return-value]
    # Skills have no title: they sort as an empty one.
    return func.coalesce(RegistryObject.title, "")


@dataclass(frozen=True, slots=True)
class ListFilter:
    alias: str | None = None
    name: tuple[str, ...] = ()  # substrings of the name, all of them, any case


@dataclass(frozen=True, slots=True)
class Keyset:
    """The order of a list page, and the row the page starts after (None: the first page)."""

    key: SortKey
    descending: bool
    after: tuple[Any, str] | None = None


class RegistryRepository(WorkspaceRepository[RegistryObject]):
    model = RegistryObject

    def __init__(self, session: AsyncSession, tenant: Tenant, kind: str) -> None:
        super().__init__(session, tenant)
        self.kind = kind

    def visible(self) -> Select[RegistryObject]:
        """This kind's objects of the workspace that the caller may read: a private one only
        by its creator's user (a key with no user: those created with no user)."""
        user = self.tenant.user_id
        own = RegistryObject.created_by == user if user else RegistryObject.created_by.is_(None)
        return self.select().where(
            RegistryObject.kind == self.kind,
            or_(RegistryObject.sharing_scope != "private", own),
        )

    async def find(self, ref: str) -> list[RegistryObject]:
        """The visible objects whose id or name is `ref` (two when they differ)."""
        stmt = self.visible().where(or_(RegistryObject.id == ref, RegistryObject.name == ref))
        return await self.list(stmt.limit(2))

    async def add_version(self, row: RegistryVersion) -> None:
        self.session.add(row)
        await self.session.flush()

    async def version(self, object_id: str, number: int) -> RegistryVersion | None:
        stmt = select(RegistryVersion).where(
            RegistryVersion.object_id == object_id, RegistryVersion.version == number
        )
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def versions(self, object_id: str) -> list[RegistryVersion]:
        """Every version of the object, newest first."""
        stmt = (
            select(RegistryVersion)
            .where(RegistryVersion.object_id == object_id)
            .order_by(RegistryVersion.version.desc())
        )
        return list((await self.session.execute(stmt)).scalars())

    async def aliases(self, object_ids: list[str]) -> dict[str, dict[str, int]]:
        """The aliases of each object: `{object_id: {alias: version}}`."""
        found: dict[str, dict[str, int]] = {id_: {} for id_ in object_ids}
        if not object_ids:
            return found
        # Columns, not entities: `point` rewrites rows behind the session's identity map.
        stmt = select(RegistryAlias.object_id, RegistryAlias.alias, RegistryAlias.version).where(
            RegistryAlias.object_id.in_(object_ids)
        )
        for object_id, alias, version in await self.session.execute(stmt):
            found[object_id][alias] = version
        return found

    async def versions_of(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], Any]:
        """The versions named by (object_id, version), in one query."""
        if not keys:
            return {}
        stmt = select(RegistryVersion).where(
            or_(
                *(
                    and_(RegistryVersion.object_id == id_, RegistryVersion.version == number)
                    for id_, number in keys
                )
            )
        )
        rows = (await self.session.execute(stmt)).scalars()
        return {(row.object_id, row.version): row for row in rows}

    async def point(self, object_id: str, alias: str, version: int) -> None:
        """Set `alias` on `version`, taking it from the version that held it."""
        await self.session.execute(
            delete(RegistryAlias).where(
                RegistryAlias.object_id == object_id, RegistryAlias.alias == alias
            )
        )
        # Core, not the ORM: aliases are only ever read as columns (`aliases`).
        await self.session.execute(
            insert(RegistryAlias).values(object_id=object_id, alias=alias, version=version)
        )

    async def unpoint(self, object_id: str, version: int, keep: set[str]) -> None:
        """Remove from `version` the aliases not in `keep`."""
        await self.session.execute(
            delete(RegistryAlias).where(
                RegistryAlias.object_id == object_id,
                RegistryAlias.version == version,
                RegistryAlias.alias.not_in(keep) if keep else true(),
            )
        )

    async def advance(self, row: RegistryObject, expected: int, now: datetime) -> bool:
        """Make `expected + 1` the object's latest version unless another request moved it
        first (False then)."""
        result = await self.session.execute(
            update(RegistryObject)
            .where(RegistryObject.id == row.id, RegistryObject.latest_version == expected)
            .values(latest_version=expected + 1, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        moved = getattr(result, "rowcount", 0) == 1
        if moved:
            await self.session.refresh(row)
        return moved

    async def remove(self, row: RegistryObject) -> None:
        """The object, its versions and its aliases (SQLite may run without cascading keys)."""
        for table in (RegistryAlias, RegistryVersion):
            await self.session.execute(delete(table).where(table.object_id == row.id))
        await self.delete(row)

    async def page(self, where: ListFilter, order: Keyset, limit: int) -> list[RegistryObject]:
        """Up to `limit` visible objects matching `where`, in `order`, after its row."""
        stmt = self.visible()
        if where.alias is not None:
            stmt = stmt.where(
                exists().where(
                    RegistryAlias.object_id == RegistryObject.id, RegistryAlias.alias == where.alias
                )
            )
        for part in where.name:
            stmt = stmt.where(RegistryObject.name.icontains(part, autoescape=True))
        column = sort_column(order.key)
        if order.after is not None:
            value, id_ = order.after
            if order.descending:
                beyond = or_(column < value, and_(column == value, RegistryObject.id < id_))
            else:
                beyond = or_(column > value, and_(column == value, RegistryObject.id > id_))
            stmt = stmt.where(beyond)
        if order.descending:
            stmt = stmt.order_by(column.desc(), RegistryObject.id.desc())
        else:
            stmt = stmt.order_by(column.asc(), RegistryObject.id.asc())
        return await self.list(stmt.limit(limit))
