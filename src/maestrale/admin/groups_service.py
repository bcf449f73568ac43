"""User groups: named sets of members, assigned to workspaces with roles.

A group assigned to a workspace provisions its members there with the assignment's roles, now
and when members join the group later. Provisioning only adds: removing a member from a group or
an assignment from a group leaves workspace memberships as they are (they may have been granted
directly too); remove them with /v1/admin/workspaces/{id}/remove-users.
"""

from __future__ import annotations

from typing import Any

from maestrale.admin import roles as R
from maestrale.admin.context import AdminContext, Paging
from maestrale.admin.groups_repository import GroupRepository
from maestrale.admin.groups_schemas import (
    AssignmentIn,
    AssignmentOut,
    AssignmentsPage,
    AssignmentUpdate,
    GroupCreate,
    GroupMemberOut,
    GroupMembersPage,
    GroupOut,
    GroupsPage,
    GroupUpdate,
    ProvisionIn,
    RoleRef,
)
from maestrale.admin.membership import provision
from maestrale.admin.repository import AdminRepository
from maestrale.admin.tables import UserGroup, UserGroupWorkspace
from maestrale.core.auth.tables import User, Workspace
from maestrale.core.clock import iso
from maestrale.core.errors import Conflict, NotFound


def group_out(group: UserGroup) -> GroupOut:
    return GroupOut(
        description=group.description,
        externally_managed=False,
        name=group.name,
        organization_role=group.organization_role,
        parent_group_ids=list(group.parent_group_ids or []),
        target_type="O" if group.target_type == "O" else "W",
        uuid=group.id,
    )


def _snapshot(group: UserGroup) -> dict[str, Any]:
    return group_out(group).model_dump(exclude={"uuid", "externally_managed"})


def assignment_out(row: UserGroupWorkspace, ws: Workspace) -> AssignmentOut:
    names = R.WORKSPACE.names(row.roles or [R.WS_DEFAULT])
    refs = [RoleRef(name=n, uuid=R.WORKSPACE.uuid_of(n) or n) for n in names]
    return AssignmentOut(
        created=iso(row.created_at) or "",
        role_name=refs[0].name if refs else None,
        role_uuid=refs[0].uuid if refs else None,
        roles=refs,
        workspace_name=ws.name,
        workspace_uuid=ws.id,
    )


async def _group(repo: GroupRepository, group_id: str) -> UserGroup:
    group = await repo.group(group_id)
    if group is None:
        raise NotFound(f"user group {group_id!r} not found", code="user_group_not_found")
    return group


async def _parents(repo: GroupRepository, ids: list[str], own_id: str | None) -> list[str]:
    wanted = list(dict.fromkeys(ids))
    if own_id is not None and own_id in wanted:
        raise Conflict("a group cannot be nested inside itself", code="group_cycle")
    found = await repo.existing_ids(wanted)
    for group_id in wanted:
        if group_id not in found:
            raise NotFound(
                f"user group {group_id!r} not found",
                code="user_group_not_found",
                param="parent_group_ids",
            )
    return wanted


async def _live_workspace(ctx: AdminContext, workspace_id: str) -> Workspace:
    ws = await AdminRepository(ctx.session, ctx.organization_id).workspace(workspace_id)
    if ws is None:
        raise NotFound(f"workspace {workspace_id!r} not found", code="workspace_not_found")
    if ws.archived_at is not None:
        raise Conflict("the workspace is archived", code="workspace_archived")
    return ws


async def _provision_members(
    ctx: AdminContext, user_ids: list[str], workspace_id: str, roles: list[str]
) -> None:
    for user_id in user_ids:
        await provision(ctx.session, workspace_id, user_id, roles, replace=False)


async def _grant_org_role(ctx: AdminContext, users: list[User], role: str | None) -> None:
    if not role:
        return
    for user in users:
        current = R.ORG.names(user.roles or [R.ORG_DEFAULT])
        if role not in current:
            user.roles = [*current, role]
    await ctx.session.flush()


async def list_groups(ctx: AdminContext, search: str | None, paging: Paging) -> GroupsPage:
    repo = GroupRepository(ctx.session, ctx.organization_id)
    total = await repo.count_groups(search)
    groups = await repo.groups(search, paging.offset, paging.page_size)
    return GroupsPage(
        items=[group_out(g) for g in groups],
        page=paging.page,
        page_size=paging.page_size,
        total=total,
    )


async def get_group(ctx: AdminContext, group_id: str) -> GroupOut:
    return group_out(await _group(GroupRepository(ctx.session, ctx.organization_id), group_id))


async def create_group(ctx: AdminContext, body: GroupCreate) -> GroupOut:
    repo = GroupRepository(ctx.session, ctx.organization_id)
    if await repo.group_by_name(body.name) is not None:
        raise Conflict(f"a user group named {body.name!r} exists", code="user_group_exists")
    group = UserGroup(
        organization_id=ctx.organization_id,
        name=body.name,
        description=body.description,
        target_type=body.target_type,
        parent_group_ids=await _parents(repo, body.parent_group_ids or [], None),
    )
    ctx.session.add(group)
    await ctx.session.flush()
    ctx.audit("user_group.create", "user_group", group.id, after=_snapshot(group))
    return group_out(group)


async def update_group(ctx: AdminContext, group_id: str, body: GroupUpdate) -> GroupOut:
    repo = GroupRepository(ctx.session, ctx.organization_id)
    group = await _group(repo, group_id)
    before = _snapshot(group)
    fields = body.model_dump(exclude_unset=True)
    if fields.get("name") is not None and fields["name"] != group.name:
        if await repo.group_by_name(fields["name"]) is not None:
            raise Conflict(
                f"a user group named {fields['name']!r} exists", code="user_group_exists"
            )
        group.name = fields["name"]
    if "description" in fields:
        group.description = fields["description"]
    if fields.get("target_type") is not None:
        group.target_type = fields["target_type"]
    if fields.get("parent_group_ids") is not None:
        group.parent_group_ids = await _parents(repo, fields["parent_group_ids"], group.id)
    await ctx.session.flush()
    ctx.audit("user_group.update", "user_group", group.id, before=before, after=_snapshot(group))
    return group_out(group)


async def delete_group(ctx: AdminContext, group_id: str) -> None:
    repo = GroupRepository(ctx.session, ctx.organization_id)
    group = await _group(repo, group_id)
    before = _snapshot(group)
    await ctx.session.delete(group)
    await ctx.session.flush()
    ctx.audit("user_group.delete", "user_group", group_id, before=before)


async def list_members(ctx: AdminContext, group_id: str, paging: Paging) -> GroupMembersPage:
    repo = GroupRepository(ctx.session, ctx.organization_id)
    await _group(repo, group_id)
    total = await repo.count_members(group_id)
    users = await repo.members(group_id, paging.offset, paging.page_size)
    return GroupMembersPage(
        members=[
            GroupMemberOut(
                email=u.email,
                name=" ".join(p for p in (u.first_name, u.last_name) if p) or None,
                user_uuid=u.id,
            )
            for u in users
        ],
        page=paging.page,
        page_size=paging.page_size,
        total=total,
    )


async def add_members(ctx: AdminContext, group_id: str, user_ids: list[str]) -> None:
    """Add members; they are provisioned into the group's workspaces and get its org role."""
    repo = GroupRepository(ctx.session, ctx.organization_id)
    group = await _group(repo, group_id)
    wanted = list(dict.fromkeys(user_ids))
    users = await AdminRepository(ctx.session, ctx.organization_id).users_by_ids(wanted)
    for user_id in wanted:
        if user_id not in users:
            raise NotFound(f"user {user_id!r} not found", code="user_not_found", param="user_uuids")
    current = set(await repo.member_ids(group.id))
    new = [u for u in wanted if u not in current]
    for user_id in new:
        await repo.add_member(group.id, user_id)
    for row, ws in await repo.assignments(group.id):
        if ws.archived_at is None:
            await _provision_members(ctx, new, ws.id, row.roles or [R.WS_DEFAULT])
    await _grant_org_role(ctx, [users[u] for u in new], group.organization_role)
    if new:
        ctx.audit("user_group.members_add", "user_group", group.id, after={"user_ids": new})


async def remove_members(ctx: AdminContext, group_id: str, user_ids: list[str]) -> None:
    repo = GroupRepository(ctx.session, ctx.organization_id)
    group = await _group(repo, group_id)
    current = set(await repo.member_ids(group.id))
    leaving = [u for u in dict.fromkeys(user_ids) if u in current]
    if leaving:
        await repo.remove_members(group.id, leaving)
        ctx.audit("user_group.members_remove", "user_group", group.id, before={"user_ids": leaving})


async def provision_workspace(ctx: AdminContext, body: ProvisionIn) -> None:
    """Assign the group to the workspace with one role and provision all its members."""
    repo = GroupRepository(ctx.session, ctx.organization_id)
    group = await _group(repo, body.user_group_uuid)
    ws = await _live_workspace(ctx, body.workspace_uuid)
    role = body.resolved_role()
    row = await repo.assignment(group.id, ws.id)
    before = None if row is None else {"roles": list(row.roles or [])}
    if row is None:
        row = UserGroupWorkspace(group_id=group.id, workspace_id=ws.id, roles=[role])
        ctx.session.add(row)
    elif role not in R.WORKSPACE.names(row.roles or []):
        row.roles = [*R.WORKSPACE.names(row.roles or []), role]
    await ctx.session.flush()
    await _provision_members(ctx, await repo.member_ids(group.id), ws.id, [role])
    ctx.audit(
        "user_group.provision_workspace",
        "user_group",
        group.id,
        before=before,
        after={"workspace_id": ws.id, "roles": list(row.roles)},
    )


async def list_assignments(ctx: AdminContext, group_id: str, paging: Paging) -> AssignmentsPage:
    repo = GroupRepository(ctx.session, ctx.organization_id)
    await _group(repo, group_id)
    total = await repo.count_assignments(group_id)
    rows = await repo.assignments(group_id, paging.offset, paging.page_size)
    return AssignmentsPage(
        items=[assignment_out(row, ws) for row, ws in rows],
        page=paging.page,
        page_size=paging.page_size,
        total=total,
    )


async def assign_workspace(ctx: AdminContext, group_id: str, body: AssignmentIn) -> None:
    repo = GroupRepository(ctx.session, ctx.organization_id)
    group = await _group(repo, group_id)
    ws = await _live_workspace(ctx, body.workspace_uuid)
    if await repo.assignment(group.id, ws.id) is not None:
        raise Conflict(
            "the group is already assigned to this workspace; PATCH it to change its roles",
            code="assignment_exists",
        )
    roles = body.resolved_roles() or [R.WS_DEFAULT]
    ctx.session.add(UserGroupWorkspace(group_id=group.id, workspace_id=ws.id, roles=roles))
    await ctx.session.flush()
    await _provision_members(ctx, await repo.member_ids(group.id), ws.id, roles)
    ctx.audit(
        "user_group.workspace_assign",
        "user_group",
        group.id,
        after={"workspace_id": ws.id, "roles": roles},
    )


async def update_assignment(
    ctx: AdminContext, group_id: str, workspace_id: str, body: AssignmentUpdate
) -> None:
    repo = GroupRepository(ctx.session, ctx.organization_id)
    group = await _group(repo, group_id)
    row = await repo.assignment(group.id, workspace_id)
    ws = await AdminRepository(ctx.session, ctx.organization_id).workspace(workspace_id)
    if row is None or ws is None:
        raise NotFound("the group is not assigned to this workspace", code="assignment_not_found")
    roles = body.resolved_roles()
    if roles is None:
        return
    before = {"workspace_id": ws.id, "roles": list(row.roles or [])}
    row.roles = roles or [R.WS_DEFAULT]
    await ctx.session.flush()
    if ws.archived_at is None:
        await _provision_members(ctx, await repo.member_ids(group.id), ws.id, row.roles)
    ctx.audit(
        "user_group.workspace_update",
        "user_group",
        group.id,
        before=before,
        after={"workspace_id": ws.id, "roles": list(row.roles)},
    )


async def unassign_workspace(ctx: AdminContext, group_id: str, workspace_id: str) -> None:
    repo = GroupRepository(ctx.session, ctx.organization_id)
    group = await _group(repo, group_id)
    row = await repo.assignment(group.id, workspace_id)
    if row is None:
        raise NotFound("the group is not assigned to this workspace", code="assignment_not_found")
    before = {"workspace_id": workspace_id, "roles": list(row.roles or [])}
    await ctx.session.delete(row)
    await ctx.session.flush()
    ctx.audit("user_group.workspace_unassign", "user_group", group.id, before=before)


async def set_organization_role(ctx: AdminContext, group_id: str, role: str) -> None:
    """Set the group's organization role; its members (now and later) get that role."""
    repo = GroupRepository(ctx.session, ctx.organization_id)
    group = await _group(repo, group_id)
    before = {"organization_role": group.organization_role}
    group.organization_role = R.ORG.name_of(role)
    members = await AdminRepository(ctx.session, ctx.organization_id).users_by_ids(
        await repo.member_ids(group.id)
    )
    await _grant_org_role(ctx, list(members.values()), group.organization_role)
    ctx.audit(
        "user_group.organization_role",
        "user_group",
        group.id,
        before=before,
        after={"organization_role": group.organization_role},
    )
