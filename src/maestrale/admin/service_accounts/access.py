"""Who may manage a workspace's service accounts, and which roles each caller may grant.

Managed with a workspace (standard) key, on the key's own workspace only:
- a key of a user who is `workspace_admin` of the workspace, or `organization_admin`;
- a key with no user, which acts for the workspace itself (an administrator made it);
- not an admin key (admin keys open /v1/admin only) and not a service account's own key (an
  account never creates or empowers accounts: a leaked key cannot make itself successors):
  both 403 `wrong_key_kind`; a user key without those roles: 403 `insufficient_role`.

A caller cannot grant a role above its own: organization admins and workspace keys grant every
workspace role; a workspace admin grants every role but the administrative ones it does not
hold itself (`mistral_cloud_admin`, unless it has it). The assignable-roles route lists exactly
what the caller may grant; anything else is a 403 `role_not_assignable`.
"""

from __future__ import annotations

from maestrale.admin import roles as role_catalog
from maestrale.core.auth.principal import Principal
from maestrale.core.auth.roles import InsufficientRole
from maestrale.core.errors import Forbidden

ADMINISTRATIVE = frozenset({role_catalog.WS_ADMIN, "mistral_cloud_admin"})


class WrongKeyKind(Forbidden):
    code = "wrong_key_kind"


class RoleNotAssignable(Forbidden):
    code = "role_not_assignable"


def _org_admin(principal: Principal) -> bool:
    return role_catalog.ORG_ADMIN in role_catalog.ORG.names(principal.organization_roles)


def check_manager(principal: Principal) -> None:
    """Raise the 403 of a key that may not manage service accounts."""
    if principal.kind != "standard":
        raise WrongKeyKind(
            "service accounts are managed with a workspace key (Authorization: Bearer) of a "
            "workspace admin; admin keys open /v1/admin only"
        )
    if principal.service_account_id is not None:
        raise WrongKeyKind("a service account's key cannot manage service accounts")
    if principal.workspace_roles is None or _org_admin(principal):
        return
    if role_catalog.WS_ADMIN not in role_catalog.WORKSPACE.names(principal.workspace_roles):
        raise InsufficientRole(
            "managing service accounts needs the workspace_admin role on the workspace "
            "(or organization_admin)"
        )


def assignable(principal: Principal) -> list[role_catalog.Role]:
    """The workspace roles the (manager) caller may grant, in catalog order."""
    if principal.workspace_roles is None or _org_admin(principal):
        return list(role_catalog.WORKSPACE_ROLES)
    held = set(role_catalog.WORKSPACE.names(principal.workspace_roles))
    return [
        role
        for role in role_catalog.WORKSPACE_ROLES
        if role.name not in ADMINISTRATIVE or role.name in held
    ]


def grantable_names(principal: Principal, role_ids: list[str]) -> list[str]:
    """The canonical names of `role_ids` (known roles: the schemas checked), or a 403 naming
    those the caller may not grant."""
    names = role_catalog.WORKSPACE.names(role_ids)
    allowed = {role.name for role in assignable(principal)}
    refused = [name for name in names if name not in allowed]
    if refused:
        raise RoleNotAssignable(
            f"this key may not grant {', '.join(refused)}: a caller grants only the roles "
            "GET /v1/service-accounts/assignable-roles lists for it",
            param="role_ids",
        )
    return names
