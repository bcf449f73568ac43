"""The /v1/admin tree. Every route of it needs an admin key in `x-api-key`; a standard key, of
whatever role, never opens it. An unknown admin path gets a JSON 404 with an admin key and a 401
for anyone else, so the tree reveals nothing to callers without an admin key."""

from __future__ import annotations

from fastapi import Depends

from maestrale.admin.billing.router import router as billing_router
from maestrale.admin.groups.router import router as groups_router
from maestrale.admin.keys.router import router as keys_router
from maestrale.admin.users.router import router as users_router
from maestrale.admin.workspaces.router import router as workspaces_router
from maestrale.core.auth.dependencies import admin_principal
from maestrale.core.errors import NotFound, error_responses
from maestrale.core.routing import domain_router

# Most admin writes name other members, workspaces or groups (404) and many refuse what the
# organization's state forbids (409: an archived workspace, the last admin, a group cycle).
router = domain_router(
    prefix="/admin",
    tags=["admin"],
    dependencies=[Depends(admin_principal)],
    responses=error_responses((404, 409)),
)
for _sub in (keys_router, users_router, workspaces_router, groups_router, billing_router):
    router.include_router(_sub)

ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


@router.api_route("/{path:path}", methods=ALL_METHODS, include_in_schema=False)
async def unknown_admin_route(path: str) -> None:
    """Registered last: admin paths that match no admin route."""
    raise NotFound(f"no admin route /v1/admin/{path}", code="route_not_found")
