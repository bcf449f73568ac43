"""/v1/users/me, /v1/users/me/organizations, /v1/users/me/workspaces and /v1/whoami: who the
standard key of the request belongs to (mistralai 2.8 `users.get_identity`, 3.x `beta.users`).

The key comes as `Authorization: Bearer` or, as the 2.x SDKs send it on these routes (the
platform's dashboard auth), in `x-api-key`; either way a standard key: an admin key is refused
(401) as on every route outside /v1/admin."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request

from maestrale.admin.identity.repository import IdentityRepository
from maestrale.admin.identity.schemas import (
    OrganizationList,
    UserIdentityOut,
    WhoamiOut,
    WorkspaceList,
)
from maestrale.admin.identity.service import IdentityService
from maestrale.core.auth.dependencies import authenticate_standard, resolve_key
from maestrale.core.auth.principal import Principal
from maestrale.core.errors import Unauthorized, error_responses
from maestrale.core.pagination import MAX_OFFSET, MAX_PAGE_SIZE
from maestrale.core.routing import Work, domain_router

router = domain_router(tags=["users"])


async def identity_principal(request: Request) -> Principal:
    key = request.headers.get("x-api-key", "").strip()
    if "authorization" in request.headers or not key:
        return await authenticate_standard(request)
    principal = await resolve_key(request, key)
    if principal is None:
        raise Unauthorized("invalid, expired or revoked API key", code="invalid_api_key")
    if principal.kind != "standard":
        raise Unauthorized(
            "admin keys open only /v1/admin endpoints; use a workspace API key",
            code="admin_key_not_allowed",
        )
    request.state.principal = principal
    return principal


async def identity_service(
    principal: Annotated[Principal, Depends(identity_principal)], work: Work
) -> IdentityService:
    return IdentityService(IdentityRepository(work.session), principal)


Identity = Annotated[IdentityService, Depends(identity_service)]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="results to skip")]
Limit = Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE, description="maximum number of results")]


@router.get("/users/me", response_model=UserIdentityOut, responses=error_responses((403,)))
async def get_identity(identity: Identity) -> UserIdentityOut:
    """The key's user (or service account: no email or name), its workspace, organization and
    the key itself. A key of no user or account: 403 `no_principal`."""
    return await identity.identity()


@router.get("/users/me/organizations", response_model=OrganizationList)
async def list_my_organizations(
    identity: Identity, offset: Offset = 0, limit: Limit = 100
) -> OrganizationList:
    """The organizations of the key's user: the key's organization."""
    return OrganizationList(organizations=await identity.organizations(offset, limit))


@router.get("/users/me/workspaces", response_model=WorkspaceList)
async def list_my_workspaces(
    identity: Identity,
    organization_id: Annotated[str | None, Query(max_length=36)] = None,
    offset: Offset = 0,
    limit: Limit = 100,
) -> WorkspaceList:
    """The live workspaces the key's user is a member of (a service account's or a workspace
    key's: its workspace), each with its organization."""
    return WorkspaceList(workspaces=await identity.workspaces(organization_id, offset, limit))


@router.get("/whoami", response_model=WhoamiOut, responses=error_responses((403,)))
async def whoami(identity: Identity) -> WhoamiOut:
    """The key's principal, a user or a service account (`principal_type`), with the
    organization and workspace the key is scoped to."""
    return await identity.whoami()
