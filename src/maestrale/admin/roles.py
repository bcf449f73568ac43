"""The built-in role catalog of the Admin API and the conversions between its three spellings.

A role is written by name (`role_names`, `organization_admin`), by UUID (`roles`, the values the
platform's reference lists) or by a legacy one-letter code (`role`: A, M, B). Rows store names;
responses give UUIDs in `raw_roles`. Roles are recorded, listed and managed; a standard key's
destructive routes check its user's roles (`maestrale.core.auth.roles`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Role:
    name: str
    uuid: str
    description: str
    code: str | None = None  # legacy one-letter code


ORGANIZATION_ROLES = (
    Role(
        "member",
        "0d48f530-095c-43fe-8aea-6673bcacabe6",
        "Product usage; manages their own profile",
        "M",
    ),
    Role(
        "billing_manager",
        "c955f4e1-9477-43f0-8349-6fbc629fccc9",
        "Subscriptions, invoices and payment methods; cannot change Organization settings",
        "B",
    ),
    Role(
        "organization_admin",
        "7bde5959-d676-47d2-b779-35b64323d278",
        "Full control of the Organization",
        "A",
    ),
)

WORKSPACE_ROLES = (
    Role("billing", "d7ea77c5-9260-41d0-ab26-52b5add3ee56", "Usage and cost reports only"),
    Role("user", "48436751-ee56-44bd-8a2d-712233977821", "Chat and its features; no Studio"),
    Role(
        "contributor", "375cd0db-3bbe-4b79-80f3-954ccf04f3d1", "Chat features and shared resources"
    ),
    Role("dev", "578584f1-4319-4c88-9948-38a5184483b6", "Studio and all API primitives"),
    Role("dev_contributor", "d79b3027-4eb2-4521-8722-825acfee7d8b", "Studio with shared resources"),
    Role("mistral_code_user", "252a0825-40b9-4b98-be80-7658956f13e9", "Code assistant usage"),
    Role("cloud_user", "17aa61c5-1c61-477e-a40a-e52c8ccd74b9", "Cloud console usage"),
    Role(
        "mistral_cloud_admin",
        "348fc8da-f6da-4464-ad3e-af7bc137e221",
        "Cloud console administration",
    ),
    Role(
        "workspace_contributor",
        "b23cd6e0-91cd-4a8a-9869-b30366bf3966",
        "All product features; no management or observability",
        "M",
    ),
    Role(
        "workspace_admin",
        "731eb2be-a74f-4070-b797-35bf7009e553",
        "Workspace contributor plus Workspace administration",
        "A",
    ),
    Role("observability_viewer", "ff86d432-7f27-47f8-b02f-b5c102ef6a55", "Observability product"),
    Role("workflow_executor", "0f9acbf6-93b5-42c7-a227-fc7652755f65", "Runs workflows"),
)

OrgRoleName = Literal["member", "billing_manager", "organization_admin"]
WorkspaceRoleName = Literal[
    "billing",
    "user",
    "contributor",
    "dev",
    "dev_contributor",
    "mistral_code_user",
    "cloud_user",
    "mistral_cloud_admin",
    "workspace_contributor",
    "workspace_admin",
    "observability_viewer",
    "workflow_executor",
]

ORG_ADMIN = "organization_admin"
ORG_DEFAULT = "member"
WS_ADMIN = "workspace_admin"
WS_DEFAULT = "user"


class RoleCatalog:
    """One scope's roles, looked up by name, UUID or legacy code."""

    def __init__(self, roles: Iterable[Role], legacy_aliases: dict[str, str]) -> None:
        self.roles = tuple(roles)
        self._by_name = {r.name: r for r in self.roles}
        self._lookup: dict[str, Role] = {}
        for role in self.roles:
            self._lookup[role.name] = role
            self._lookup[role.uuid] = role
            if role.code:
                self._lookup[role.code] = role
        # Names stored by earlier versions (bootstrap wrote "admin").
        self._aliases = legacy_aliases

    def find(self, value: str) -> Role | None:
        return self._lookup.get(value) or self._lookup.get(value.lower())

    def name_of(self, value: str) -> str:
        """The canonical name of a stored or given role value (unknown values pass through)."""
        role = self.find(value)
        if role is not None:
            return role.name
        return self._aliases.get(value, value)

    def names(self, values: Iterable[str]) -> list[str]:
        out: list[str] = []
        for value in values:
            name = self.name_of(value)
            if name not in out:
                out.append(name)
        return out

    def uuids(self, values: Iterable[str]) -> list[str]:
        result = []
        for name in self.names(values):
            role = self._by_name.get(name)
            result.append(role.uuid if role else name)
        return result

    def uuid_of(self, value: str) -> str | None:
        role = self._by_name.get(self.name_of(value))
        return role.uuid if role else None


ORG = RoleCatalog(ORGANIZATION_ROLES, {"admin": ORG_ADMIN})
WORKSPACE = RoleCatalog(WORKSPACE_ROLES, {"admin": WS_ADMIN, "member": "workspace_contributor"})


def check_known(catalog: RoleCatalog, values: Iterable[str], what: str) -> None:
    """Raise ValueError (a 422 in a schema) for a role value the catalog does not know."""
    unknown = [v for v in values if catalog.find(v) is None]
    if unknown:
        raise ValueError(f"unknown {what} role(s): {', '.join(unknown)} (see GET /v1/admin/roles)")
