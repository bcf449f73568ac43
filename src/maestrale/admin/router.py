"""The /v1/admin tree. Every route of it needs an admin key in `x-api-key`; a standard key, of
whatever role, never opens it. Until a path is implemented, an admin key gets a JSON 404 there and
anyone else a 401, so the tree reveals nothing to callers without an admin key."""

from __future__ import annotations

from fastapi import Depends

from maestrale.core.auth.dependencies import admin_principal
from maestrale.core.errors import NotFound
from maestrale.core.routing import domain_router

router = domain_router(prefix="/admin", tags=["admin"], dependencies=[Depends(admin_principal)])

ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


@router.api_route("/{path:path}", methods=ALL_METHODS, include_in_schema=False)
async def unknown_admin_route(path: str) -> None:
    """Registered last: admin paths that match no admin route."""
    raise NotFound(f"no admin route /v1/admin/{path}", code="route_not_found")
