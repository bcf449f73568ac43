"""Workspaces of the organization and their members. Archiving a workspace (DELETE) keeps its
data but refuses its keys at once on every replica."""

from __future__ import annotations

from typing import Any

from maestrale.admin import roles as role_catalog
from maestrale.admin.context import AdminContext
from maestrale.admin.keys.repository import StandardKeyRepository
from maestrale.admin.membership import Memberships
from maestrale.admin.role_fields import raw_roles
from maestrale.admin.users.repository import UserRepository
from maestrale.admin.workspaces.repository import WorkspaceAdminRepository
from maestrale.admin.workspaces.schemas import (
    MembersAdded,
    MembersDeleted,
    MembersUpserted,
    WorkspaceCreate,
    WorkspaceCreated,
    WorkspaceMemberIn,
    WorkspaceOut,
    WorkspacesPage,
    WorkspaceUpdate,
)
from maestrale.core.auth.invalidation import Invalidation
from maestrale.core.auth.tables import Workspace
from maestrale.core.clock import utcnow
from maestrale.core.errors import Conflict, NotFound
from maestrale.core.pagination import PageParams


def workspace_out(ws: Workspace, members: int | None) -> WorkspaceOut:
    return WorkspaceOut(
        description=ws.description,
        icon=ws.icon,
        is_default=ws.is_default,
        members_count=members,
        name=ws.name,
        spend_limit=None,  # spend limits are per organization (GET /v1/admin/spend-limit)
        uuid=ws.id,
    )


def _snapshot(ws: Workspace) -> dict[str, Any]:
    return {
        "name": ws.name,
        "description": ws.description,
        "icon": ws.icon,
        "archived_at": ws.archived_at,
    }


class WorkspaceService:
    def __init__(self, ctx: AdminContext) -> None:
        self.ctx = ctx
        self.repo = WorkspaceAdminRepository(ctx.session, ctx.organization_id)
        self.users = UserRepository(ctx.session, ctx.organization_id)
        self.keys = StandardKeyRepository(ctx.session, ctx.organization_id)
        self.memberships = Memberships(self.repo)

    async def _workspace(self, workspace_id: str, *, live: bool) -> Workspace:
        ws = await self.repo.workspace(workspace_id)
        if ws is None:
            raise NotFound(f"workspace {workspace_id!r} not found", code="workspace_not_found")
        if live and ws.archived_at is not None:
            raise Conflict("the workspace is archived", code="workspace_archived")
        return ws

    async def _members_count(self, ws: Workspace) -> int:
        return (await self.repo.member_counts([ws.id])).get(ws.id, 0)

    async def list_workspaces(
        self, include_archived: bool, search: str | None, paging: PageParams
    ) -> WorkspacesPage:
        total = await self.repo.count_workspaces(include_archived, search)
        spaces = await self.repo.workspaces(include_archived, search, paging.offset, paging.limit)
        counts = await self.repo.member_counts(w.id for w in spaces)
        return WorkspacesPage(
            items=[workspace_out(w, counts.get(w.id, 0)) for w in spaces],
            page=paging.page,
            page_size=paging.page_size,
            total=total,
        )

    async def create_workspace(self, body: WorkspaceCreate) -> WorkspaceCreated:
        admin = await self.users.user(body.admin_user_id)
        if admin is None:
            raise NotFound(
                f"user {body.admin_user_id!r} not found",
                code="user_not_found",
                param="admin_user_id",
            )
        ws = await self.repo.add(
            Workspace(
                organization_id=self.ctx.organization_id,
                name=body.name,
                description=body.description or None,
                icon=body.icon or None,
            )
        )
        await self.memberships.provision(ws.id, admin.id, [role_catalog.WS_ADMIN], replace=True)
        if body.add_all_org_members:
            for user in await self.users.users(None, 0, 1_000_000):
                if user.id != admin.id:
                    await self.memberships.provision(
                        ws.id, user.id, [role_catalog.WS_DEFAULT], replace=False
                    )
        members = await self._members_count(ws)
        self.ctx.audit(
            "workspace.create",
            "workspace",
            ws.id,
            after={**_snapshot(ws), "admin_user_id": admin.id, "members_count": members},
        )
        raw = raw_roles(role_catalog.WORKSPACE, [role_catalog.WS_ADMIN], role_catalog.WS_ADMIN)
        return WorkspaceCreated(
            **workspace_out(ws, members).model_dump(), raw_role=raw[0], raw_roles=raw
        )

    async def update_workspace(self, workspace_id: str, body: WorkspaceUpdate) -> WorkspaceOut:
        ws = await self._workspace(workspace_id, live=False)
        before = _snapshot(ws)
        fields = body.model_dump(exclude_unset=True)
        if fields.get("name") is not None:
            ws.name = fields["name"]
        if "description" in fields:
            ws.description = fields["description"] or None
        if "icon" in fields:
            ws.icon = fields["icon"] or None
        await self.repo.flush()
        self.ctx.audit("workspace.update", "workspace", ws.id, before=before, after=_snapshot(ws))
        return workspace_out(ws, await self._members_count(ws))

    async def archive_workspace(self, workspace_id: str) -> None:
        """Archive a workspace (idempotent); every replica refuses its keys once the change
        has committed."""
        ws = await self._workspace(workspace_id, live=False)
        if ws.is_default:
            raise Conflict("the default workspace cannot be archived", code="default_workspace")
        if ws.archived_at is not None:
            return
        before = _snapshot(ws)
        ws.archived_at = utcnow()
        await self.repo.flush()
        self.ctx.audit("workspace.archive", "workspace", ws.id, before=before, after=_snapshot(ws))
        self.ctx.invalidate(Invalidation("workspace", ws.id))

    async def _check_users(self, members: list[WorkspaceMemberIn]) -> None:
        users = await self.users.users_by_ids(m.user_uuid for m in members)
        for m in members:
            if m.user_uuid not in users:
                raise NotFound(f"user {m.user_uuid!r} not found", code="user_not_found")

    async def add_members(
        self, workspace_id: str, members: list[WorkspaceMemberIn]
    ) -> MembersAdded:
        """Add users that are not members yet (existing members are left as they are)."""
        ws = await self._workspace(workspace_id, live=True)
        await self._check_users(members)
        current = await self.repo.memberships(ws.id)
        added = 0
        for m in members:
            if m.user_uuid in current:
                continue
            roles = m.resolved_roles() or [role_catalog.WS_DEFAULT]
            outcome = await self.memberships.provision(ws.id, m.user_uuid, roles, replace=True)
            if outcome == "added":
                added += 1
                self.ctx.audit(
                    "workspace.member_add",
                    "workspace",
                    ws.id,
                    after={"user_id": m.user_uuid, "roles": role_catalog.WORKSPACE.names(roles)},
                )
        return MembersAdded(added_members_count=added)

    async def upsert_members(
        self, workspace_id: str, members: list[WorkspaceMemberIn]
    ) -> MembersUpserted:
        """Add new members and set the roles of existing ones (idempotent)."""
        ws = await self._workspace(workspace_id, live=True)
        await self._check_users(members)
        current = await self.repo.memberships(ws.id)
        added = updated = 0
        for m in members:
            existing = current.get(m.user_uuid)
            before = (
                None if existing is None else role_catalog.WORKSPACE.names(existing.roles or [])
            )
            roles = m.resolved_roles()
            if roles is None:
                roles = before if before else [role_catalog.WS_DEFAULT]
            outcome = await self.memberships.provision(ws.id, m.user_uuid, roles, replace=True)
            if outcome == "unchanged":
                continue
            added += outcome == "added"
            updated += outcome == "updated"
            self.ctx.audit(
                f"workspace.member_{'add' if outcome == 'added' else 'update'}",
                "workspace",
                ws.id,
                before=None if before is None else {"user_id": m.user_uuid, "roles": before},
                after={"user_id": m.user_uuid, "roles": role_catalog.WORKSPACE.names(roles)},
            )
        return MembersUpserted(added_members_count=added, updated_members_count=updated)

    async def remove_members(self, workspace_id: str, user_ids: list[str]) -> MembersDeleted:
        """Remove members; their keys in this workspace are revoked everywhere at once."""
        ws = await self._workspace(workspace_id, live=False)
        current = await self.repo.memberships(ws.id)
        removing = [u for u in dict.fromkeys(user_ids) if u in current]
        revoked: list[str] = []
        for user_id in removing:
            keys = await self.keys.revoke_keys(user_id=user_id, workspace_id=ws.id)
            revoked += keys
            roles = role_catalog.WORKSPACE.names(current[user_id].roles or [])
            self.ctx.audit(
                "workspace.member_remove",
                "workspace",
                ws.id,
                before={"user_id": user_id, "roles": roles},
                after={"revoked_keys": keys},
            )
        deleted = await self.repo.remove_members(ws.id, removing) if removing else 0
        self.ctx.invalidate(*(Invalidation("key", key_id) for key_id in revoked))
        return MembersDeleted(deleted_members_count=deleted)
