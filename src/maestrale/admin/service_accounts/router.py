"""/v1/service-accounts (mistralai 3.x `beta.service_accounts`): a workspace's non-human
principals, managed with a workspace key of a workspace admin (see `access.py` for who may, and
what each caller may grant). An account's API keys are created and deleted with the admin API
(`POST /v1/admin/api-keys` with `service_account_id`): the SDK has no key operation."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request, Response

from maestrale.admin.context import AdminContext
from maestrale.admin.service_accounts.access import WrongKeyKind, check_manager
from maestrale.admin.service_accounts.schemas import (
    AssignableRoleList,
    ServiceAccountCreate,
    ServiceAccountList,
    ServiceAccountOut,
    ServiceAccountRoleList,
    ServiceAccountRolesSet,
    ServiceAccountUpdate,
    SortOrder,
)
from maestrale.admin.service_accounts.service import ServiceAccountService
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import authenticate_standard
from maestrale.core.errors import Unauthorized, error_responses
from maestrale.core.pagination import MAX_OFFSET, MAX_PAGE_SIZE
from maestrale.core.routing import Work, domain_router

router = domain_router(
    prefix="/service-accounts",
    tags=["service_accounts"],
    responses=error_responses((403, 404)),
)


async def service_accounts(request: Request, work: Work) -> ServiceAccountService:
    try:
        principal = await authenticate_standard(request)
    except Unauthorized as exc:
        if exc.code != "admin_key_not_allowed":
            raise
        # A valid key of the wrong kind: refused (403), not unauthenticated.
        raise WrongKeyKind(
            "service accounts are managed with a workspace key of a workspace admin; admin "
            "keys open /v1/admin only"
        ) from exc
    check_manager(principal)
    ctx = AdminContext(work, principal, app_services(request).invalidator, actor="workspace_api")
    return ServiceAccountService(ctx)


Accounts = Annotated[ServiceAccountService, Depends(service_accounts)]


@router.post(
    "", status_code=201, response_model=ServiceAccountOut, responses=error_responses((409,))
)
async def create_service_account(
    body: ServiceAccountCreate, accounts: Accounts
) -> ServiceAccountOut:
    """Create a service account in the key's workspace (`workspace_id`), with `role_ids`
    (workspace role UUIDs; omitted or empty: no role, which still calls the API but deletes
    nothing the workspace shares)."""
    return await accounts.create(body)


@router.get("", response_model=ServiceAccountList)
async def list_service_accounts(
    accounts: Accounts,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 100,
    workspace_id: Annotated[str | None, Query(max_length=36)] = None,
    include_deleted: bool = False,
    q: Annotated[str | None, Query(max_length=200)] = None,
    order: SortOrder = "asc",
) -> ServiceAccountList:
    """The service accounts of the key's workspace, by creation time; `q` keeps those whose
    name or description contains it. Another workspace's id: 404."""
    accounts.check_workspace(workspace_id)
    items = await accounts.page(
        offset=offset, limit=limit, include_deleted=include_deleted, q=q, order=order
    )
    return ServiceAccountList(items=items)


@router.get("/assignable-roles", response_model=AssignableRoleList)
async def list_assignable_service_account_roles(
    accounts: Accounts, workspace_id: Annotated[str, Query(max_length=36)]
) -> AssignableRoleList:
    """The workspace roles this key may grant to a service account (never one above its own)."""
    accounts.check_workspace(workspace_id)
    return AssignableRoleList(items=accounts.assignable_roles())


@router.get("/{service_account_id}", response_model=ServiceAccountOut)
async def get_service_account(service_account_id: str, accounts: Accounts) -> ServiceAccountOut:
    """One service account of the key's workspace."""
    return await accounts.get(service_account_id)


@router.patch("/{service_account_id}", response_model=ServiceAccountOut)
async def update_service_account(
    service_account_id: str, body: ServiceAccountUpdate, accounts: Accounts
) -> ServiceAccountOut:
    """Change a service account's description."""
    return await accounts.update(service_account_id, body)


@router.delete("/{service_account_id}", status_code=204, response_class=Response)
async def delete_service_account(service_account_id: str, accounts: Accounts) -> Response:
    """Delete a service account: its API keys are revoked at once, on every replica."""
    await accounts.delete(service_account_id)
    return Response(status_code=204)


@router.get("/{service_account_id}/roles", response_model=ServiceAccountRoleList)
async def list_service_account_roles(
    service_account_id: str, accounts: Accounts
) -> ServiceAccountRoleList:
    """The workspace roles of a service account (role UUIDs)."""
    return ServiceAccountRoleList(items=await accounts.roles(service_account_id))


@router.put("/{service_account_id}/roles", response_model=ServiceAccountRoleList)
async def set_service_account_roles(
    service_account_id: str, body: ServiceAccountRolesSet, accounts: Accounts
) -> ServiceAccountRoleList:
    """Replace a service account's workspace roles (a non-empty list; each one the key may
    grant). Its keys act with the new roles at once."""
    return ServiceAccountRoleList(items=await accounts.set_roles(service_account_id, body.role_ids))
