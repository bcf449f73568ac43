"""Who may do what with a library.

A caller (a key: its organization, its workspace, and its user when it has one) is a library's
owner when the library belongs to the caller's workspace, or to the caller's user in that
workspace. Otherwise the library's sharings that name the caller's user, workspace or
organization give it their best role: Viewer reads, Editor also writes documents. Only the
owner shares, unshares and deletes the library. A library of another organization, or one
nothing gives the caller, is not found (404), whatever its id.

These rules, as SQL (what a caller sees, which sharings name it), are `LibraryRepository`'s.
"""

from __future__ import annotations

from collections.abc import Iterable

from maestrale.core.auth.principal import Tenant
from maestrale.libraries.tables import Library

VIEWER, EDITOR, OWNER = "Viewer", "Editor", "Owner"
RANK = {VIEWER: 1, EDITOR: 2, OWNER: 3}
USER, WORKSPACE, ORG = "User", "Workspace", "Org"


def owns(tenant: Tenant, library: Library) -> bool:
    """Whether the caller owns `library`: its workspace's, or its user's in that workspace."""
    if library.organization_id != tenant.organization_id:
        return False
    own_user = tenant.user_id is not None and library.owner_id == tenant.user_id
    return library.workspace_id == tenant.workspace_id and (
        library.owner_type == WORKSPACE or (library.owner_type == USER and own_user)
    )


def best_role(roles: Iterable[str]) -> str | None:
    """The best of the roles sharings give (None for none, or none known)."""
    best = max((str(role) for role in roles), key=lambda r: RANK.get(r, 0), default=None)
    return best if best in RANK else None
