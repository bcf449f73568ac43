"""/v1/admin/workspaces: the organization's workspaces and their members."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Response

from maestrale.admin.context import Admin, Pages
from maestrale.admin.workspaces.schemas import (
    MembersAdded,
    MembersDeleted,
    MembersUpserted,
    WorkspaceCreate,
    WorkspaceCreated,
    WorkspaceMembersIn,
    WorkspaceMembersRemove,
    WorkspaceOut,
    WorkspacesPage,
    WorkspaceUpdate,
)
from maestrale.admin.workspaces.service import WorkspaceService
from maestrale.core.routing import domain_router

router = domain_router(prefix="/workspaces")


async def workspace_service(ctx: Admin) -> WorkspaceService:
    return WorkspaceService(ctx)


Workspaces = Annotated[WorkspaceService, Depends(workspace_service)]


@router.get("", response_model=WorkspacesPage)
async def get_workspaces(
    workspaces: Workspaces,
    pages: Pages,
    is_archived: Annotated[
        bool | None, Query(description="include archived workspaces (also `include_archived`)")
    ] = None,
    include_archived: Annotated[bool | None, Query(include_in_schema=False)] = None,
    search: Annotated[str | None, Query(max_length=255, description="name contains")] = None,
) -> WorkspacesPage:
    """List the organization's workspaces; archived ones only when asked for."""
    archived = bool(is_archived if is_archived is not None else include_archived)
    return await workspaces.list_workspaces(archived, search, pages)


@router.post("", response_model=WorkspaceCreated)
async def create_workspace(body: WorkspaceCreate, workspaces: Workspaces) -> WorkspaceCreated:
    """Create a workspace; `admin_user_id` becomes its workspace_admin."""
    return await workspaces.create_workspace(body)


@router.delete("/{workspace_uuid}", status_code=204, response_class=Response)
async def delete_workspace(workspace_uuid: str, workspaces: Workspaces) -> Response:
    """Archive a workspace: its keys are refused at once on every replica."""
    await workspaces.archive_workspace(workspace_uuid)
    return Response(status_code=204)


@router.patch("/{workspace_uuid}", response_model=WorkspaceOut)
async def update_workspace(
    workspace_uuid: str, body: WorkspaceUpdate, workspaces: Workspaces
) -> WorkspaceOut:
    """Rename a workspace or change its description or icon."""
    return await workspaces.update_workspace(workspace_uuid, body)


@router.post("/{workspace_uuid}/add-users", response_model=MembersAdded)
async def add_users(
    workspace_uuid: str, body: WorkspaceMembersIn, workspaces: Workspaces
) -> MembersAdded:
    """Add organization members to the workspace (existing members are left unchanged)."""
    return await workspaces.add_members(workspace_uuid, body.members or [])


@router.patch("/{workspace_uuid}/users", response_model=MembersUpserted)
async def upsert_users(
    workspace_uuid: str, body: WorkspaceMembersIn, workspaces: Workspaces
) -> MembersUpserted:
    """Add members or set the roles of existing ones (idempotent)."""
    return await workspaces.upsert_members(workspace_uuid, body.members or [])


@router.delete("/{workspace_uuid}/remove-users", response_model=MembersDeleted)
async def remove_users(
    workspace_uuid: str, body: WorkspaceMembersRemove, workspaces: Workspaces
) -> MembersDeleted:
    """Remove members from the workspace; their keys there are revoked everywhere at once."""
    return await workspaces.remove_members(workspace_uuid, [m.user_uuid for m in body.members])
