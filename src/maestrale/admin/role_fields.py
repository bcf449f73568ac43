"""Request fields that name roles, with the platform's exclusivity rules (422 when both are
given): `role` vs `role_name` (both deprecated), `role_names` vs `roles`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Self

from pydantic import BaseModel, field_validator, model_validator

from maestrale.admin import roles as role_catalog


def _exclusive(a: object, b: object, names: tuple[str, str]) -> None:
    if a is not None and b is not None:
        raise ValueError(f"`{names[0]}` and `{names[1]}` are mutually exclusive; send only one")


class _RoleFields(BaseModel):
    """The four role fields of one scope; subclasses name the scope's catalog and role names."""

    _catalog: ClassVar[role_catalog.RoleCatalog]
    _scope: ClassVar[str]

    role: str | None = None
    role_name: str | None = None
    role_names: Sequence[str] | None = None
    roles: list[str] | None = None

    @field_validator("role")
    @classmethod
    def _known_role(cls, value: str | None) -> str | None:
        if value is not None:
            role_catalog.check_known(cls._catalog, [value], cls._scope)
        return value

    @field_validator("roles")
    @classmethod
    def _known_roles(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            role_catalog.check_known(cls._catalog, value, cls._scope)
        return value

    @model_validator(mode="after")
    def _exclusivity(self) -> Self:
        _exclusive(self.role, self.role_name, ("role", "role_name"))
        _exclusive(self.role_names, self.roles, ("role_names", "roles"))
        return self

    def resolved_roles(self) -> list[str] | None:
        """Role names to set, or None when no role field was sent (the plural ones win)."""
        if self.role_names is not None:
            return self._catalog.names(self.role_names)
        if self.roles is not None:
            return self._catalog.names(self.roles)
        if self.role_name is not None:
            return [self.role_name]
        if self.role is not None:
            return self._catalog.names([self.role])
        return None


class OrgRoleFields(_RoleFields):
    _catalog = role_catalog.ORG
    _scope = "organization"

    role_name: role_catalog.OrgRoleName | None = None
    role_names: list[role_catalog.OrgRoleName] | None = None


class WorkspaceRoleFields(_RoleFields):
    _catalog = role_catalog.WORKSPACE
    _scope = "workspace"

    role_name: role_catalog.WorkspaceRoleName | None = None
    role_names: list[role_catalog.WorkspaceRoleName] | None = None


def raw_roles(
    catalog: role_catalog.RoleCatalog, stored: list[str] | None, default: str
) -> list[str]:
    """The UUIDs of stored role names (`raw_roles` in responses); the default when empty."""
    return catalog.uuids(stored or [default])
