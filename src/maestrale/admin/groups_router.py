"""/v1/admin/user-groups: groups, their members and their workspace assignments."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Response

from maestrale.admin import groups_service as service
from maestrale.admin.context import Admin, Pages
from maestrale.admin.groups_schemas import (
    AssignmentIn,
    AssignmentsPage,
    AssignmentUpdate,
    GroupCreate,
    GroupMembersPage,
    GroupOut,
    GroupsPage,
    GroupUpdate,
    OrganizationRoleIn,
    ProvisionIn,
    UserUuids,
)
from maestrale.core.routing import domain_router

router = domain_router(prefix="/user-groups")


@router.get("", response_model=GroupsPage)
async def get_user_groups(
    ctx: Admin,
    pages: Pages,
    search: Annotated[str | None, Query(max_length=255, description="name contains")] = None,
) -> GroupsPage:
    """List the organization's user groups."""
    return await service.list_groups(ctx, search, pages)


@router.post("", response_model=GroupOut)
async def create_user_group(body: GroupCreate, ctx: Admin) -> GroupOut:
    """Create a user group (names are unique in the organization)."""
    group = await service.create_group(ctx, body)
    await ctx.commit()
    return group


@router.post("/provision-workspace", status_code=204, response_class=Response)
async def provision_group_to_workspace(body: ProvisionIn, ctx: Admin) -> Response:
    """Provision every member of a group into a workspace with one role (and keep the group
    assigned there, so members who join later are provisioned too)."""
    await service.provision_workspace(ctx, body)
    await ctx.commit()
    return Response(status_code=204)


@router.get("/{group_uuid}", response_model=GroupOut)
async def get_user_group(group_uuid: str, ctx: Admin) -> GroupOut:
    """One user group."""
    return await service.get_group(ctx, group_uuid)


@router.delete("/{group_uuid}", status_code=204, response_class=Response)
async def delete_user_group(group_uuid: str, ctx: Admin) -> Response:
    """Delete a group (its members' workspace memberships stay)."""
    await service.delete_group(ctx, group_uuid)
    await ctx.commit()
    return Response(status_code=204)


@router.patch("/{group_uuid}", response_model=GroupOut)
async def update_user_group(group_uuid: str, body: GroupUpdate, ctx: Admin) -> GroupOut:
    """Change a group's name, description, target type or parents."""
    group = await service.update_group(ctx, group_uuid, body)
    await ctx.commit()
    return group


@router.get("/{group_uuid}/members", response_model=GroupMembersPage)
async def get_user_group_members(group_uuid: str, ctx: Admin, pages: Pages) -> GroupMembersPage:
    """List a group's members."""
    return await service.list_members(ctx, group_uuid, pages)


@router.post("/{group_uuid}/members", status_code=204, response_class=Response)
async def assign_users_to_group(group_uuid: str, body: UserUuids, ctx: Admin) -> Response:
    """Add users to a group; they are provisioned into the group's workspaces."""
    await service.add_members(ctx, group_uuid, body.user_uuids)
    await ctx.commit()
    return Response(status_code=204)


@router.delete("/{group_uuid}/members", status_code=204, response_class=Response)
async def remove_users_from_group(group_uuid: str, body: UserUuids, ctx: Admin) -> Response:
    """Remove users from a group."""
    await service.remove_members(ctx, group_uuid, body.user_uuids)
    await ctx.commit()
    return Response(status_code=204)


@router.get("/{group_uuid}/workspaces", response_model=AssignmentsPage)
async def get_group_workspace_assignments(
    group_uuid: str, ctx: Admin, pages: Pages
) -> AssignmentsPage:
    """List the workspaces a group is assigned to, with the roles it grants there."""
    return await service.list_assignments(ctx, group_uuid, pages)


@router.post("/{group_uuid}/workspaces", status_code=204, response_class=Response)
async def assign_group_to_workspace(group_uuid: str, body: AssignmentIn, ctx: Admin) -> Response:
    """Assign a group to a workspace with roles; its members are provisioned there."""
    await service.assign_workspace(ctx, group_uuid, body)
    await ctx.commit()
    return Response(status_code=204)


@router.patch("/{group_uuid}/workspaces/{workspace_uuid}", status_code=204, response_class=Response)
async def update_group_workspace_assignment(
    group_uuid: str, workspace_uuid: str, body: AssignmentUpdate, ctx: Admin
) -> Response:
    """Change the roles a group grants in a workspace."""
    await service.update_assignment(ctx, group_uuid, workspace_uuid, body)
    await ctx.commit()
    return Response(status_code=204)


@router.delete(
    "/{group_uuid}/workspaces/{workspace_uuid}", status_code=204, response_class=Response
)
async def remove_group_from_workspace(group_uuid: str, workspace_uuid: str, ctx: Admin) -> Response:
    """Remove a group's workspace assignment (members stay in the workspace)."""
    await service.unassign_workspace(ctx, group_uuid, workspace_uuid)
    await ctx.commit()
    return Response(status_code=204)


@router.patch("/{group_uuid}/organization-role", status_code=204, response_class=Response)
async def update_group_organization_role(
    group_uuid: str, body: OrganizationRoleIn, ctx: Admin
) -> Response:
    """Set the organization role of a group; its members get that role."""
    await service.set_organization_role(ctx, group_uuid, body.organization_role)
    await ctx.commit()
    return Response(status_code=204)
