"""What the domains that run prompts and skills (agents, conversations, responses) read of the
registries: one published version, by id or name, and a version number or an alias."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import NotFound
from maestrale.registries.errors import AmbiguousReference
from maestrale.registries.repository import RegistryRepository
from maestrale.registries.tables import RegistryObject
from maestrale.registries.tables import RegistryVersion as VersionRow

Kind = Literal["prompt", "skill"]


class RegistryNotFound(NotFound):
    """No such prompt or skill in the caller's workspace, or no such version or alias of it."""


@dataclass(frozen=True, slots=True)
class RegistryVersion:
    kind: Kind
    id: str
    name: str
    version: int
    # The version's definition as the SDK models it: a prompt's {"content", "variables"}, a
    # skill's {"description", "body", "assets"}.
    definition: dict[str, Any]


class RegistryLookup:
    def __init__(self, session: AsyncSession, tenant: Tenant) -> None:
        self.session = session
        self.tenant = tenant

    async def resolve(
        self, kind: Kind, ref: str, *, version: int | None = None, alias: str | None = None
    ) -> RegistryVersion:
        """The version of the prompt or skill `ref` (its id, else its name) of the tenant's
        workspace: `version`, else the one `alias` points to, else the latest. Raises
        `RegistryNotFound` (404) when there is none."""
        repo = RegistryRepository(self.session, self.tenant, kind)
        found = await find_object(repo, ref, strict=False)
        row = await pick_version(repo, found, version, alias)
        return RegistryVersion(kind, found.id, found.name, row.version, dict(row.definition))


async def find_object(repo: RegistryRepository, ref: str, *, strict: bool = True) -> RegistryObject:
    """The object of the repository's kind whose id is `ref`, else whose name is: 404 when the
    caller sees none. When `ref` is one object's id and another's name: 409 if `strict` (the
    HTTP paths), else the one with that id."""
    found = await repo.find(ref)
    if not found:
        raise RegistryNotFound(f"no {repo.kind} {ref!r}", param=f"{repo.kind}_id")
    if len(found) > 1 and not strict:
        return next(row for row in found if row.id == ref)
    if len(found) > 1:
        raise AmbiguousReference(
            f"{ref!r} is the id of one {repo.kind} and the name of another: use the id",
            param=f"{repo.kind}_id",
        )
    return found[0]


async def pick_version(
    repo: RegistryRepository, found: RegistryObject, version: int | None, alias: str | None
) -> VersionRow:
    """`version` of `found`, else the version `alias` points to, else its latest."""
    if version is None and alias is not None:
        version = (await repo.aliases([found.id]))[found.id].get(alias)
        if version is None:
            raise RegistryNotFound(f"{repo.kind} {found.name!r} has no alias {alias!r}")
    number = found.latest_version if version is None else version
    row = await repo.version(found.id, number)
    if row is None:
        raise RegistryNotFound(f"{repo.kind} {found.name!r} has no version {number}")
    return row
