"""The rules of the prompts and skills registries, one service for both kinds: names unique per
workspace and kind, immutable versions (an identical definition is the latest one again),
aliases that move between versions, and who may read and write an object (`sharing_scope`,
`workspace_relation`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import as_utc, utcnow
from maestrale.core.errors import BadRequest
from maestrale.core.ids import new_id
from maestrale.core.pagination import decode_cursor, encode_cursor
from maestrale.core.validation import FieldInvalid
from maestrale.registries.definitions import definition_hash
from maestrale.registries.errors import (
    NameTaken,
    ReadOnly,
    VersionConflict,
)
from maestrale.registries.lookup import Kind, find_object, pick_version
from maestrale.registries.repository import Keyset, ListFilter, RegistryRepository, SortKey
from maestrale.registries.schemas import MAX_ALIASES
from maestrale.registries.shapes import Resolved
from maestrale.registries.tables import RegistryObject, RegistryVersion

_UNSPECIFIED = ("sharing_scope_unspecified", "share_relation_unspecified")
_TEXT_KEYS = ("name", "title")


@dataclass(frozen=True, slots=True)
class NewVersion:
    """A definition as stored (see `definitions`), with its notes and aliases."""

    definition: dict[str, Any]
    notes: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Order:
    key: SortKey = "created_at"
    direction: Literal["asc", "desc"] | None = None  # None: desc for times, asc for text

    @property
    def descending(self) -> bool:
        if self.direction is None:
            return self.key not in _TEXT_KEYS
        return self.direction == "desc"


def _bad_token() -> BadRequest:
    return BadRequest(
        "invalid page token (or one of another sort order)",
        code="invalid_page_token",
        param="pageToken",
    )


def _given(value: str | None, default: str) -> str:
    return default if value is None or value in _UNSPECIFIED else value


class RegistryService:
    def __init__(self, session: AsyncSession, tenant: Tenant, kind: Kind) -> None:
        self.tenant = tenant
        self.kind: Kind = kind
        self.repo = RegistryRepository(session, tenant, kind)

    # Access.

    def _is_creator(self, obj: RegistryObject) -> bool:
        return obj.created_by == self.tenant.user_id

    def _check_writable(self, obj: RegistryObject) -> None:
        if obj.workspace_relation == "reader" and not self._is_creator(obj):
            raise ReadOnly(f"{self.kind} {obj.name!r} is read-only for the workspace")

    async def _writable(self, ref: str) -> RegistryObject:
        obj = await find_object(self.repo, ref)
        self._check_writable(obj)
        return obj

    async def _resolved(self, obj: RegistryObject, row: RegistryVersion) -> Resolved:
        aliases = (await self.repo.aliases([obj.id]))[obj.id]
        return Resolved(obj, row, [a for a, v in aliases.items() if v == row.version])

    # Aliases.

    async def _point(self, obj: RegistryObject, version: int, aliases: tuple[str, ...]) -> None:
        for alias in dict.fromkeys(aliases):
            await self.repo.point(obj.id, alias, version)
        total = len((await self.repo.aliases([obj.id]))[obj.id])
        if total > MAX_ALIASES:
            raise FieldInvalid(
                ["body", "aliases"], f"a {self.kind} has at most {MAX_ALIASES} aliases"
            )

    # Objects.

    async def create(
        self,
        name: str,
        first: NewVersion,
        *,
        sharing_scope: str | None = None,
        workspace_relation: str | None = None,
        title: str | None = None,
        description: str | None = None,
    ) -> Resolved:
        """A new object with its version 1 (409 when the name is taken)."""
        now = utcnow()
        obj = RegistryObject(
            id=new_id(),
            kind=self.kind,
            name=name,
            title=title,
            description=description,
            sharing_scope=_given(sharing_scope, "workspace"),
            workspace_relation=_given(workspace_relation, "writer"),
            latest_version=1,
            created_by=self.tenant.user_id,
            created_at=now,
            updated_at=now,
        )
        if not await self.repo.add_unique(obj):
            raise NameTaken(f"a {self.kind} named {name!r} exists already", param="name")
        row = RegistryVersion(
            object_id=obj.id,
            version=1,
            definition=first.definition,
            definition_hash=definition_hash(first.definition),
            notes=first.notes,
            created_at=now,
        )
        await self.repo.add_version(row)
        await self._point(obj, 1, first.aliases)
        return Resolved(obj, row, sorted(set(first.aliases)))

    async def get(self, ref: str, version: int | None = None, alias: str | None = None) -> Resolved:
        obj = await find_object(self.repo, ref)
        return await self._resolved(obj, await pick_version(self.repo, obj, version, alias))

    async def update(self, ref: str, changes: dict[str, Any]) -> Resolved:
        """Change the object's metadata (the keys of `changes`); its sharing only by its
        creator."""
        obj = await self._writable(ref)
        sharing = {"sharing_scope", "workspace_relation"} & changes.keys()
        if sharing and not self._is_creator(obj):
            raise ReadOnly(f"only the creator of {self.kind} {obj.name!r} changes its sharing")
        if "sharing_scope" in changes:
            obj.sharing_scope = _given(changes["sharing_scope"], obj.sharing_scope)
        if "workspace_relation" in changes:
            obj.workspace_relation = _given(changes["workspace_relation"], obj.workspace_relation)
        for key in ("title", "description"):
            if key in changes:
                setattr(obj, key, changes[key])
        obj.updated_at = utcnow()
        await self.repo.session.flush()
        return await self.get(obj.id)

    async def delete(self, ref: str) -> None:
        await self.repo.remove(await self._writable(ref))

    async def page(
        self, where: ListFilter, order: Order, size: int, token: str | None
    ) -> tuple[list[Resolved], str | None]:
        """A page of objects at their latest versions, and the token of the next page (None
        on the last)."""
        after = self._after(token, order) if token else None
        keyset = Keyset(order.key, order.descending, after)
        rows = await self.repo.page(where, keyset, size + 1)
        more, rows = len(rows) > size, rows[:size]
        versions = await self.repo.versions_of([(o.id, o.latest_version) for o in rows])
        aliases = await self.repo.aliases([o.id for o in rows])
        items = [
            Resolved(
                o,
                versions[(o.id, o.latest_version)],
                [a for a, v in aliases[o.id].items() if v == o.latest_version],
            )
            for o in rows
            if (o.id, o.latest_version) in versions
        ]
        return items, self._token(rows[-1], order) if more and rows else None

    def _token(self, last: RegistryObject, order: Order) -> str:
        value: Any
        if order.key in ("created_at", "last_modified_at"):
            stamp = last.created_at if order.key == "created_at" else last.updated_at
            value = as_utc(stamp).isoformat()
        else:
            value = (last.name if order.key == "name" else last.title) or ""
        return encode_cursor({"k": order.key, "d": order.descending, "v": value, "i": last.id})

    def _after(self, token: str, order: Order) -> tuple[Any, str]:
        try:
            cursor = decode_cursor(token)
        except BadRequest as exc:
            raise _bad_token() from exc
        value, id_ = cursor.get("v"), cursor.get("i")
        if (
            cursor.get("k") != order.key
            or cursor.get("d") != order.descending
            or not isinstance(value, str)
            or not isinstance(id_, str)
        ):
            raise _bad_token()
        if order.key in _TEXT_KEYS:
            return value, id_
        try:
            return as_utc(datetime.fromisoformat(value)), id_
        except ValueError as exc:
            raise _bad_token() from exc

    # Versions.

    async def versions(self, ref: str) -> list[tuple[RegistryVersion, list[str]]]:
        """Every version, newest first, with its aliases."""
        obj = await find_object(self.repo, ref)
        aliases = (await self.repo.aliases([obj.id]))[obj.id]
        return [
            (row, [a for a, v in aliases.items() if v == row.version])
            for row in await self.repo.versions(obj.id)
        ]

    async def add_version(self, ref: str, new: NewVersion) -> tuple[int, bool]:
        """Append version N+1 (its number, False), or, when the definition is the latest
        version's, that version (its number, True) with nothing added but the aliases."""
        obj = await self._writable(ref)
        latest = obj.latest_version
        digest = definition_hash(new.definition)
        current = await self.repo.version(obj.id, latest)
        if current is not None and current.definition_hash == digest:
            await self._point(obj, latest, new.aliases)
            return latest, True
        now = utcnow()
        if not await self.repo.advance(obj, latest, now):
            raise VersionConflict(
                f"another version of {self.kind} {obj.name!r} was created at the same time: retry"
            )
        row = RegistryVersion(
            object_id=obj.id,
            version=latest + 1,
            definition=new.definition,
            definition_hash=digest,
            notes=new.notes,
            created_at=now,
        )
        await self.repo.add_version(row)
        await self._point(obj, row.version, new.aliases)
        return row.version, False

    async def update_version(
        self, ref: str, version: int, changes: dict[str, Any], aliases: list[str] | None
    ) -> Resolved:
        """Change a version's notes (when `changes` has them) and, when `aliases` is given,
        make them exactly its aliases (taking each from the version that held it)."""
        obj = await self._writable(ref)
        row = await pick_version(self.repo, obj, version, None)
        if "notes" in changes:
            row.notes = changes["notes"]
        if aliases is not None:
            await self.repo.unpoint(obj.id, version, set(aliases))
            await self._point(obj, version, tuple(aliases))
        obj.updated_at = utcnow()
        await self.repo.session.flush()
        return await self._resolved(obj, row)
