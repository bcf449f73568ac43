"""Who is calling: the key's organization, workspace and user, resolved once per request."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Principal:
    key_id: str
    kind: str  # standard | admin
    organization_id: str
    workspace_id: str | None
    user_id: str | None
    expires_at: datetime | None
    # The roles of the key's user in its workspace and its organization, as stored; None for a
    # key with no user (it acts for the workspace itself). See `core/auth/roles.py`.
    workspace_roles: frozenset[str] | None = None
    organization_roles: frozenset[str] = frozenset()
    # The service account a key belongs to (its roles are then `workspace_roles`).
    service_account_id: str | None = None


@dataclass(frozen=True, slots=True)
class Tenant:
    """The scope every workspace repository query is bound to."""

    organization_id: str
    workspace_id: str
    user_id: str | None = None

    @classmethod
    def of(cls, principal: Principal) -> Tenant:
        if principal.workspace_id is None:
            raise ValueError("an admin principal has no workspace scope")
        return cls(principal.organization_id, principal.workspace_id, principal.user_id)
