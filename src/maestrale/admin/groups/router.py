"""/v1/admin/user-groups: groups, their members and their workspace assignments."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Response

from maestrale.admin.context import Admin, Pages
from maestrale.admin.groups.schemas import (
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
from maestrale.admin.groups.service import GroupService
from maestrale.core.routing import domain_router

router = domain_router(prefix="/user-groups")


async def group_service(ctx: Admin) -> GroupService:
    return GroupService(ctx)


Groups = Annotated[GroupService, Depends(group_service)]


@router.get("", response_model=GroupsPage)
async def get_user_groups(
    groups: Groups,
    pages: Pages,
    search: Annotated[str | None, Query(max_length=255, description="name contains")] = None,
) -> GroupsPage:
    """List the organization's user groups."""
    return await groups.list_groups(search, pages)


@router.post("", response_model=GroupOut)
async def create_user_group(body: GroupCreate, groups: Groups) -> GroupOut:
    """Create a user group (names are unique in the organization)."""
    return await groups.create_group(body)


@router.post("/provision-workspace", status_code=204, response_class=Response)
async def provision_group_to_workspace(body: ProvisionIn, groups: Groups) -> Response:
    """Provision every member of a group into a workspace with one role (and keep the group
    assigned there, so members who join later are provisioned too)."""
    await groups.provision_workspace(body)
    return Response(status_code=204)


@router.get("/{group_uuid}", response_model=GroupOut)
async def get_user_group(group_uuid: str, groups: Groups) -> GroupOut:
    """One user group."""
    return await groups.get_group(group_uuid)


@router.delete("/{group_uuid}", status_code=204, response_class=Response)
async def delete_user_group(group_uuid: str, groups: Groups) -> Response:
    """Delete a group (its members' workspace memberships stay)."""
    await groups.delete_group(group_uuid)
    return Response(status_code=204)


@router.patch("/{group_uuid}", response_model=GroupOut)
async def update_user_group(group_uuid: str, body: GroupUpdate, groups: Groups) -> GroupOut:
    """Change a group's name, description, target type or parents."""
    return await groups.update_group(group_uuid, body)


@router.get("/{group_uuid}/members", response_model=GroupMembersPage)
async def get_user_group_members(group_uuid: str, groups: Groups, pages: Pages) -> GroupMembersPage:
    """List a group's members."""
    return await groups.list_members(group_uuid, pages)


@router.post("/{group_uuid}/members", status_code=204, response_class=Response)
async def assign_users_to_group(group_uuid: str, body: UserUuids, groups: Groups) -> Response:
    """Add users to a group; they are provisioned into the group's workspaces."""
    await groups.add_members(group_uuid, body.user_uuids)
    return Response(status_code=204)


@router.delete("/{group_uuid}/members", status_code=204, response_class=Response)
async def remove_users_from_group(group_uuid: str, body: UserUuids, groups: Groups) -> Response:
    """Remove users from a group."""
    await groups.remove_members(group_uuid, body.user_uuids)
    return Response(status_code=204)


@router.get("/{group_uuid}/workspaces", response_model=AssignmentsPage)
async def get_group_workspace_assignments(
    group_uuid: str, groups: Groups, pages: Pages
) -> AssignmentsPage:
    """List the workspaces a group is assigned to, with the roles it grants there."""
    return await groups.list_assignments(group_uuid, pages)


@router.post("/{group_uuid}/workspaces", status_code=204, response_class=Response)
async def assign_group_to_workspace(
    group_uuid: str, body: AssignmentIn, groups: Groups
) -> Response:
    """Assign a group to a workspace with roles; its members are provisioned there."""
    await groups.assign_workspace(group_uuid, body)
    return Response(status_code=204)


@router.patch("/{group_uuid}/workspaces/{workspace_uuid}", status_code=204, response_class=Response)
async def update_group_workspace_assignment(
    group_uuid: str, workspace_uuid: str, body: AssignmentUpdate, groups: Groups
) -> Response:
    """Change the roles a group grants in a workspace."""
    await groups.update_assignment(group_uuid, workspace_uuid, body)
    return Response(status_code=204)


@router.delete(
    "/{group_uuid}/workspaces/{workspace_uuid}", status_code=204, response_class=Response
)
async def remove_group_from_workspace(
    group_uuid: str, workspace_uuid: str, groups: Groups
) -> Response:
    """Remove a group's workspace assignment (members stay in the workspace)."""
    await groups.unassign_workspace(group_uuid, workspace_uuid)
    return Response(status_code=204)


@router.patch("/{group_uuid}/organization-role", status_code=204, response_class=Response)
async def update_group_organization_role(
    group_uuid: str, body: OrganizationRoleIn, groups: Groups
) -> Response:
    """Set the organization role of a group; its members get that role."""
    await groups.set_organization_role(group_uuid, body.organization_role)
    return Response(status_code=204)
