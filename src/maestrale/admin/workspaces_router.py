"""/v1/admin/workspaces: the organization's workspaces and their members."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Response

from maestrale.admin import workspaces_service as service
from maestrale.admin.context import Admin, Pages
from maestrale.admin.workspaces_schemas import (
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
from maestrale.core.routing import domain_router

router = domain_router(prefix="/workspaces")


@router.get("", response_model=WorkspacesPage)
async def get_workspaces(
    ctx: Admin,
    pages: Pages,
    is_archived: Annotated[
        bool | None, Query(description="include archived workspaces (also `include_archived`)")
    ] = None,
    include_archived: Annotated[bool | None, Query(include_in_schema=False)] = None,
    search: Annotated[str | None, Query(max_length=255, description="name contains")] = None,
) -> WorkspacesPage:
    """List the organization's workspaces; archived ones only when asked for."""
    archived = bool(is_archived if is_archived is not None else include_archived)
    return await service.list_workspaces(ctx, archived, search, pages)


@router.post("", response_model=WorkspaceCreated)
async def create_workspace(body: WorkspaceCreate, ctx: Admin) -> WorkspaceCreated:
    """Create a workspace; `admin_user_id` becomes its workspace_admin."""
    created = await service.create_workspace(ctx, body)
    await ctx.commit()
    return created


@router.delete("/{workspace_uuid}", status_code=204, response_class=Response)
async def delete_workspace(workspace_uuid: str, ctx: Admin) -> Response:
    """Archive a workspace: its keys are refused at once on every replica."""
    await service.archive_workspace(ctx, workspace_uuid)
    await ctx.commit()
    return Response(status_code=204)


@router.patch("/{workspace_uuid}", response_model=WorkspaceOut)
async def update_workspace(workspace_uuid: str, body: WorkspaceUpdate, ctx: Admin) -> WorkspaceOut:
    """Rename a workspace or change its description or icon."""
    updated = await service.update_workspace(ctx, workspace_uuid, body)
    await ctx.commit()
    return updated


@router.post("/{workspace_uuid}/add-users", response_model=MembersAdded)
async def add_users(workspace_uuid: str, body: WorkspaceMembersIn, ctx: Admin) -> MembersAdded:
    """Add organization members to the workspace (existing members are left unchanged)."""
    added = await service.add_members(ctx, workspace_uuid, body.members or [])
    await ctx.commit()
    return added


@router.patch("/{workspace_uuid}/users", response_model=MembersUpserted)
async def upsert_users(
    workspace_uuid: str, body: WorkspaceMembersIn, ctx: Admin
) -> MembersUpserted:
    """Add members or set the roles of existing ones (idempotent)."""
    result = await service.upsert_members(ctx, workspace_uuid, body.members or [])
    await ctx.commit()
    return result


@router.delete("/{workspace_uuid}/remove-users", response_model=MembersDeleted)
async def remove_users(
    workspace_uuid: str, body: WorkspaceMembersRemove, ctx: Admin
) -> MembersDeleted:
    """Remove members from the workspace; their keys there are revoked everywhere at once."""
    result = await service.remove_members(ctx, workspace_uuid, [m.user_uuid for m in body.members])
    await ctx.commit()
    return result
