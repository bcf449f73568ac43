"""Who may destroy what a workspace shares: one check, made where every standard key is
authenticated, so that every destructive route has it, including routes added later.

A route is destructive when its method is DELETE, or when it is a POST or PUT whose last path
segment is an action that removes, stops or hides something (`archive`, `cancel`,
`terminate`...). Such a route needs a workspace role that holds the platform's "shared
resources" (contributor, dev_contributor, workspace_contributor, workspace_admin; the names
`admin` and `member` earlier versions stored mean workspace_admin and workspace_contributor), or
the organization_admin role. `user` ("chat and its features"), `dev` ("Studio", without shared
resources), `billing` and the others get 403. Exempt, as the caller's own: conversations (the
chat feature every role has) and a connector's `/user/...` credentials and activation (the
caller's user's own). A key with no user acts for the workspace itself (an administrator made it
for a service) and is not restricted.
"""

from __future__ import annotations

import re

from starlette.requests import HTTPConnection

from maestrale.core.auth.principal import Principal
from maestrale.core.errors import Forbidden
from maestrale.tracing.spans import route_of

SHARED_RESOURCE_ROLES = frozenset(
    {
        "contributor",
        "dev_contributor",
        "workspace_contributor",
        "workspace_admin",
        "admin",
        "member",
    }
)
ORGANIZATION_ADMINS = frozenset({"organization_admin", "admin"})  # "admin": as stored before
DESTRUCTIVE_ACTIONS = frozenset(
    {
        "archive",
        "bulk-delete",
        "cancel",
        "clear",
        "deactivate",
        "delete",
        "purge",
        "remove",
        "reset",
        "revoke",
        "terminate",
    }
)
# The caller's own things, not the workspace's (see the module's docstring).
EXEMPT = (
    re.compile(r"^/v1/conversations(/|$)"),
    re.compile(r"^/v1/connectors/[^/]+/user(/|$)"),
)


class InsufficientRole(Forbidden):
    code = "insufficient_role"


def is_destructive(method: str, path: str) -> bool:
    """Whether `method` on the route template `path` destroys something the workspace shares."""
    if any(pattern.match(path) for pattern in EXEMPT):
        return False
    if method == "DELETE":
        return True
    return method in ("POST", "PUT") and path.rstrip("/").rsplit("/", 1)[-1] in DESTRUCTIVE_ACTIONS


def may_destroy_shared(principal: Principal) -> bool:
    """Whether the key may delete, archive or stop what its workspace shares."""
    if principal.workspace_roles is None:
        return True
    if not ORGANIZATION_ADMINS.isdisjoint(principal.organization_roles):
        return True
    return not SHARED_RESOURCE_ROLES.isdisjoint(principal.workspace_roles)


def check_route_role(connection: HTTPConnection, principal: Principal) -> None:
    """403 `insufficient_role` when the matched route is destructive and the key's user lacks
    the role for it."""
    method = connection.scope.get("method")
    if method is None or not is_destructive(method, route_of(connection.scope)):
        return
    if not may_destroy_shared(principal):
        roles = ", ".join(sorted(principal.workspace_roles or ())) or "none"
        raise InsufficientRole(
            f"{method} {route_of(connection.scope)} deletes or stops what the workspace shares: "
            "it needs a workspace role with shared resources (contributor, dev_contributor, "
            f"workspace_contributor, workspace_admin) or organization_admin; this key's user has "
            f"{roles}"
        )
