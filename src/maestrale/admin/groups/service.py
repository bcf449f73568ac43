"""User groups: named sets of members, assigned to workspaces with roles.

A group assigned to a workspace provisions its members there with the assignment's roles, now
and when members join the group later. Provisioning only adds: removing a member from a group or
an assignment from a group leaves workspace memberships as they are (they may have been granted
directly too); remove them with /v1/admin/workspaces/{id}/remove-users.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError

from maestrale.admin import roles as role_catalog
from maestrale.admin.context import AdminContext
from maestrale.admin.groups.repository import GroupRepository
from maestrale.admin.groups.schemas import (
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
from maestrale.admin.groups.tables import UserGroup, UserGroupWorkspace
from maestrale.admin.membership import Memberships
from maestrale.admin.users.repository import UserRepository
from maestrale.admin.workspaces.repository import WorkspaceAdminRepository
from maestrale.core.auth.tables import User, Workspace
from maestrale.core.clock import iso
from maestrale.core.errors import Conflict, NotFound
from maestrale.core.pagination import PageParams


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
    names = role_catalog.WORKSPACE.names(row.roles or [role_catalog.WS_DEFAULT])
    refs = [RoleRef(name=n, uuid=role_catalog.WORKSPACE.uuid_of(n) or n) for n in names]
    return AssignmentOut(
        created=iso(row.created_at) or "",
        role_name=refs[0].name if refs else None,
        role_uuid=refs[0].uuid if refs else None,
        roles=refs,
        workspace_name=ws.name,
        workspace_uuid=ws.id,
    )


def _name_taken(name: str) -> Conflict:
    return Conflict(f"a user group named {name!r} exists", code="user_group_exists")


def _already_assigned() -> Conflict:
    return Conflict(
        "the group is already assigned to this workspace; PATCH it to change its roles",
        code="assignment_exists",
    )


class GroupService:
    def __init__(self, ctx: AdminContext) -> None:
        self.ctx = ctx
        self.repo = GroupRepository(ctx.session, ctx.organization_id)
        self.users = UserRepository(ctx.session, ctx.organization_id)
        self.workspaces = WorkspaceAdminRepository(ctx.session, ctx.organization_id)
        self.memberships = Memberships(self.workspaces)

    async def _group(self, group_id: str) -> UserGroup:
        group = await self.repo.group(group_id)
        if group is None:
            raise NotFound(f"user group {group_id!r} not found", code="user_group_not_found")
        return group

    async def _parents(self, ids: list[str], own_id: str | None) -> list[str]:
        wanted = list(dict.fromkeys(ids))
        if own_id is not None and own_id in wanted:
            raise Conflict("a group cannot be nested inside itself", code="group_cycle")
        found = await self.repo.existing_ids(wanted)
        for group_id in wanted:
            if group_id not in found:
                raise NotFound(
                    f"user group {group_id!r} not found",
                    code="user_group_not_found",
                    param="parent_group_ids",
                )
        return wanted

    async def _check_name_free(self, name: str) -> None:
        if await self.repo.group_by_name(name) is not None:
            raise _name_taken(name)

    async def _write(self, group: UserGroup) -> None:
        """Write the group now, so that a name taken meanwhile by a concurrent request is a
        409 like any other taken name (the unique constraint decides)."""
        try:
            await self.repo.add(group)
        except IntegrityError as exc:
            raise _name_taken(group.name) from exc

    async def _live_workspace(self, workspace_id: str) -> Workspace:
        ws = await self.workspaces.workspace(workspace_id)
        if ws is None:
            raise NotFound(f"workspace {workspace_id!r} not found", code="workspace_not_found")
        if ws.archived_at is not None:
            raise Conflict("the workspace is archived", code="workspace_archived")
        return ws

    async def _provision_members(
        self, user_ids: list[str], workspace_id: str, roles: list[str]
    ) -> None:
        for user_id in user_ids:
            await self.memberships.provision(workspace_id, user_id, roles, replace=False)

    async def _grant_org_role(self, users: list[User], role: str | None) -> None:
        if not role:
            return
        for user in users:
            current = role_catalog.ORG.names(user.roles or [role_catalog.ORG_DEFAULT])
            if role not in current:
                user.roles = [*current, role]
        await self.users.flush()

    async def list_groups(self, search: str | None, paging: PageParams) -> GroupsPage:
        total = await self.repo.count_groups(search)
        groups = await self.repo.groups(search, paging.offset, paging.limit)
        return GroupsPage(
            items=[group_out(g) for g in groups],
            page=paging.page,
            page_size=paging.page_size,
            total=total,
        )

    async def get_group(self, group_id: str) -> GroupOut:
        return group_out(await self._group(group_id))

    async def create_group(self, body: GroupCreate) -> GroupOut:
        await self._check_name_free(body.name)
        group = UserGroup(
            organization_id=self.ctx.organization_id,
            name=body.name,
            description=body.description,
            target_type=body.target_type,
            parent_group_ids=await self._parents(body.parent_group_ids or [], None),
        )
        await self._write(group)
        self.ctx.audit("user_group.create", "user_group", group.id, after=_snapshot(group))
        return group_out(group)

    async def update_group(self, group_id: str, body: GroupUpdate) -> GroupOut:
        group = await self._group(group_id)
        before = _snapshot(group)
        fields = body.model_dump(exclude_unset=True)
        if fields.get("name") is not None and fields["name"] != group.name:
            await self._check_name_free(fields["name"])
            group.name = fields["name"]
        if "description" in fields:
            group.description = fields["description"]
        if fields.get("target_type") is not None:
            group.target_type = fields["target_type"]
        if fields.get("parent_group_ids") is not None:
            group.parent_group_ids = await self._parents(fields["parent_group_ids"], group.id)
        await self._write(group)
        self.ctx.audit(
            "user_group.update", "user_group", group.id, before=before, after=_snapshot(group)
        )
        return group_out(group)

    async def delete_group(self, group_id: str) -> None:
        group = await self._group(group_id)
        before = _snapshot(group)
        await self.repo.delete(group)
        self.ctx.audit("user_group.delete", "user_group", group_id, before=before)

    async def list_members(self, group_id: str, paging: PageParams) -> GroupMembersPage:
        await self._group(group_id)
        total = await self.repo.count_members(group_id)
        users = await self.repo.members(group_id, paging.offset, paging.limit)
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

    async def add_members(self, group_id: str, user_ids: list[str]) -> None:
        """Add members; they are provisioned into the group's workspaces and get its org
        role."""
        group = await self._group(group_id)
        wanted = list(dict.fromkeys(user_ids))
        users = await self.users.users_by_ids(wanted)
        for user_id in wanted:
            if user_id not in users:
                raise NotFound(
                    f"user {user_id!r} not found", code="user_not_found", param="user_uuids"
                )
        current = set(await self.repo.member_ids(group.id))
        new = [u for u in wanted if u not in current]
        for user_id in new:
            await self.repo.add_member(group.id, user_id)
        for row, ws in await self.repo.assignments(group.id):
            if ws.archived_at is None:
                await self._provision_members(new, ws.id, row.roles or [role_catalog.WS_DEFAULT])
        await self._grant_org_role([users[u] for u in new], group.organization_role)
        if new:
            self.ctx.audit(
                "user_group.members_add", "user_group", group.id, after={"user_ids": new}
            )

    async def remove_members(self, group_id: str, user_ids: list[str]) -> None:
        group = await self._group(group_id)
        current = set(await self.repo.member_ids(group.id))
        leaving = [u for u in dict.fromkeys(user_ids) if u in current]
        if leaving:
            await self.repo.remove_members(group.id, leaving)
            self.ctx.audit(
                "user_group.members_remove", "user_group", group.id, before={"user_ids": leaving}
            )

    async def provision_workspace(self, body: ProvisionIn) -> None:
        """Assign the group to the workspace with one role and provision all its members."""
        group = await self._group(body.user_group_uuid)
        ws = await self._live_workspace(body.workspace_uuid)
        role = body.resolved_role()
        row = await self.repo.assignment(group.id, ws.id)
        before = None if row is None else {"roles": list(row.roles or [])}
        if row is None:
            row = UserGroupWorkspace(group_id=group.id, workspace_id=ws.id, roles=[role])
        elif role not in role_catalog.WORKSPACE.names(row.roles or []):
            row.roles = [*role_catalog.WORKSPACE.names(row.roles or []), role]
        await self.repo.add(row)
        await self._provision_members(await self.repo.member_ids(group.id), ws.id, [role])
        self.ctx.audit(
            "user_group.provision_workspace",
            "user_group",
            group.id,
            before=before,
            after={"workspace_id": ws.id, "roles": list(row.roles)},
        )

    async def list_assignments(self, group_id: str, paging: PageParams) -> AssignmentsPage:
        await self._group(group_id)
        total = await self.repo.count_assignments(group_id)
        rows = await self.repo.assignments(group_id, paging.offset, paging.limit)
        return AssignmentsPage(
            items=[assignment_out(row, ws) for row, ws in rows],
            page=paging.page,
            page_size=paging.page_size,
            total=total,
        )

    async def assign_workspace(self, group_id: str, body: AssignmentIn) -> None:
        group = await self._group(group_id)
        ws = await self._live_workspace(body.workspace_uuid)
        if await self.repo.assignment(group.id, ws.id) is not None:
            raise _already_assigned()
        roles = body.resolved_roles() or [role_catalog.WS_DEFAULT]
        row = UserGroupWorkspace(group_id=group.id, workspace_id=ws.id, roles=roles)
        try:
            await self.repo.add(row)
        except IntegrityError as exc:  # assigned meanwhile by a concurrent request
            raise _already_assigned() from exc
        await self._provision_members(await self.repo.member_ids(group.id), ws.id, roles)
        self.ctx.audit(
            "user_group.workspace_assign",
            "user_group",
            group.id,
            after={"workspace_id": ws.id, "roles": roles},
        )

    async def update_assignment(
        self, group_id: str, workspace_id: str, body: AssignmentUpdate
    ) -> None:
        group = await self._group(group_id)
        row = await self.repo.assignment(group.id, workspace_id)
        ws = await self.workspaces.workspace(workspace_id)
        if row is None or ws is None:
            raise NotFound(
                "the group is not assigned to this workspace", code="assignment_not_found"
            )
        roles = body.resolved_roles()
        if roles is None:
            return
        before = {"workspace_id": ws.id, "roles": list(row.roles or [])}
        row.roles = roles or [role_catalog.WS_DEFAULT]
        await self.repo.flush()
        if ws.archived_at is None:
            await self._provision_members(await self.repo.member_ids(group.id), ws.id, row.roles)
        self.ctx.audit(
            "user_group.workspace_update",
            "user_group",
            group.id,
            before=before,
            after={"workspace_id": ws.id, "roles": list(row.roles)},
        )

    async def unassign_workspace(self, group_id: str, workspace_id: str) -> None:
        group = await self._group(group_id)
        row = await self.repo.assignment(group.id, workspace_id)
        if row is None:
            raise NotFound(
                "the group is not assigned to this workspace", code="assignment_not_found"
            )
        before = {"workspace_id": workspace_id, "roles": list(row.roles or [])}
        await self.repo.delete(row)
        self.ctx.audit("user_group.workspace_unassign", "user_group", group.id, before=before)

    async def set_organization_role(self, group_id: str, role: str) -> None:
        """Set the group's organization role; its members (now and later) get that role."""
        group = await self._group(group_id)
        before = {"organization_role": group.organization_role}
        group.organization_role = role_catalog.ORG.name_of(role)
        members = await self.users.users_by_ids(await self.repo.member_ids(group.id))
        await self._grant_org_role(list(members.values()), group.organization_role)
        self.ctx.audit(
            "user_group.organization_role",
            "user_group",
            group.id,
            before=before,
            after={"organization_role": group.organization_role},
        )
