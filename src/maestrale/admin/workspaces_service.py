"""Workspaces of the organization and their members. Archiving a workspace (DELETE) keeps its
data but refuses its keys at once on every replica."""

from __future__ import annotations

from typing import Any

from maestrale.admin import roles as R
from maestrale.admin.context import AdminContext, Paging
from maestrale.admin.membership import provision
from maestrale.admin.repository import AdminRepository
from maestrale.admin.role_fields import raw_roles
from maestrale.admin.workspaces_schemas import (
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


async def _workspace(repo: AdminRepository, workspace_id: str, *, live: bool) -> Workspace:
    ws = await repo.workspace(workspace_id)
    if ws is None:
        raise NotFound(f"workspace {workspace_id!r} not found", code="workspace_not_found")
    if live and ws.archived_at is not None:
        raise Conflict("the workspace is archived", code="workspace_archived")
    return ws


async def list_workspaces(
    ctx: AdminContext, include_archived: bool, search: str | None, paging: Paging
) -> WorkspacesPage:
    repo = AdminRepository(ctx.session, ctx.organization_id)
    total = await repo.count_workspaces(include_archived, search)
    spaces = await repo.workspaces(include_archived, search, paging.offset, paging.page_size)
    counts = await repo.member_counts(w.id for w in spaces)
    return WorkspacesPage(
        items=[workspace_out(w, counts.get(w.id, 0)) for w in spaces],
        page=paging.page,
        page_size=paging.page_size,
        total=total,
    )


async def create_workspace(ctx: AdminContext, body: WorkspaceCreate) -> WorkspaceCreated:
    repo = AdminRepository(ctx.session, ctx.organization_id)
    admin = await repo.user(body.admin_user_id)
    if admin is None:
        raise NotFound(
            f"user {body.admin_user_id!r} not found", code="user_not_found", param="admin_user_id"
        )
    ws = Workspace(
        organization_id=ctx.organization_id,
        name=body.name,
        description=body.description or None,
        icon=body.icon or None,
    )
    ctx.session.add(ws)
    await ctx.session.flush()
    await provision(ctx.session, ws.id, admin.id, [R.WS_ADMIN], replace=True)
    if body.add_all_org_members:
        for user in await repo.users(None, 0, 1_000_000):
            if user.id != admin.id:
                await provision(ctx.session, ws.id, user.id, [R.WS_DEFAULT], replace=False)
    members = (await repo.member_counts([ws.id])).get(ws.id, 0)
    ctx.audit(
        "workspace.create",
        "workspace",
        ws.id,
        after={**_snapshot(ws), "admin_user_id": admin.id, "members_count": members},
    )
    raw = raw_roles(R.WORKSPACE, [R.WS_ADMIN], R.WS_ADMIN)
    return WorkspaceCreated(
        **workspace_out(ws, members).model_dump(), raw_role=raw[0], raw_roles=raw
    )


async def update_workspace(
    ctx: AdminContext, workspace_id: str, body: WorkspaceUpdate
) -> WorkspaceOut:
    repo = AdminRepository(ctx.session, ctx.organization_id)
    ws = await _workspace(repo, workspace_id, live=False)
    before = _snapshot(ws)
    fields = body.model_dump(exclude_unset=True)
    if fields.get("name") is not None:
        ws.name = fields["name"]
    if "description" in fields:
        ws.description = fields["description"] or None
    if "icon" in fields:
        ws.icon = fields["icon"] or None
    await ctx.session.flush()
    ctx.audit("workspace.update", "workspace", ws.id, before=before, after=_snapshot(ws))
    return workspace_out(ws, (await repo.member_counts([ws.id])).get(ws.id, 0))


async def archive_workspace(ctx: AdminContext, workspace_id: str) -> None:
    repo = AdminRepository(ctx.session, ctx.organization_id)
    ws = await _workspace(repo, workspace_id, live=False)
    if ws.is_default:
        raise Conflict("the default workspace cannot be archived", code="default_workspace")
    if ws.archived_at is not None:
        return
    before = _snapshot(ws)
    ws.archived_at = utcnow()
    await ctx.session.flush()
    ctx.audit("workspace.archive", "workspace", ws.id, before=before, after=_snapshot(ws))
    ctx.invalidate(Invalidation("workspace", ws.id))


async def _check_users(repo: AdminRepository, members: list[WorkspaceMemberIn]) -> None:
    users = await repo.users_by_ids(m.user_uuid for m in members)
    for m in members:
        if m.user_uuid not in users:
            raise NotFound(f"user {m.user_uuid!r} not found", code="user_not_found")


async def add_members(
    ctx: AdminContext, workspace_id: str, members: list[WorkspaceMemberIn]
) -> MembersAdded:
    """Add users that are not members yet (existing members are left as they are)."""
    repo = AdminRepository(ctx.session, ctx.organization_id)
    ws = await _workspace(repo, workspace_id, live=True)
    await _check_users(repo, members)
    current = await repo.memberships(ws.id)
    added = 0
    for m in members:
        if m.user_uuid in current:
            continue
        roles = m.resolved_roles() or [R.WS_DEFAULT]
        if await provision(ctx.session, ws.id, m.user_uuid, roles, replace=True) == "added":
            added += 1
            ctx.audit(
                "workspace.member_add",
                "workspace",
                ws.id,
                after={"user_id": m.user_uuid, "roles": R.WORKSPACE.names(roles)},
            )
    return MembersAdded(added_members_count=added)


async def upsert_members(
    ctx: AdminContext, workspace_id: str, members: list[WorkspaceMemberIn]
) -> MembersUpserted:
    """Add new members and set the roles of existing ones (idempotent)."""
    repo = AdminRepository(ctx.session, ctx.organization_id)
    ws = await _workspace(repo, workspace_id, live=True)
    await _check_users(repo, members)
    current = await repo.memberships(ws.id)
    added = updated = 0
    for m in members:
        existing = current.get(m.user_uuid)
        before = None if existing is None else R.WORKSPACE.names(existing.roles or [])
        roles = m.resolved_roles()
        if roles is None:
            roles = before if before else [R.WS_DEFAULT]
        outcome = await provision(ctx.session, ws.id, m.user_uuid, roles, replace=True)
        if outcome == "unchanged":
            continue
        added += outcome == "added"
        updated += outcome == "updated"
        ctx.audit(
            f"workspace.member_{'add' if outcome == 'added' else 'update'}",
            "workspace",
            ws.id,
            before=None if before is None else {"user_id": m.user_uuid, "roles": before},
            after={"user_id": m.user_uuid, "roles": R.WORKSPACE.names(roles)},
        )
    return MembersUpserted(added_members_count=added, updated_members_count=updated)


async def remove_members(
    ctx: AdminContext, workspace_id: str, user_ids: list[str]
) -> MembersDeleted:
    """Remove members; their keys in this workspace are revoked everywhere at once."""
    repo = AdminRepository(ctx.session, ctx.organization_id)
    ws = await _workspace(repo, workspace_id, live=False)
    current = await repo.memberships(ws.id)
    removing = [u for u in dict.fromkeys(user_ids) if u in current]
    revoked: list[str] = []
    for user_id in removing:
        keys = await repo.revoke_keys(user_id=user_id, workspace_id=ws.id)
        revoked += keys
        ctx.audit(
            "workspace.member_remove",
            "workspace",
            ws.id,
            before={"user_id": user_id, "roles": R.WORKSPACE.names(current[user_id].roles or [])},
            after={"revoked_keys": keys},
        )
    deleted = await repo.remove_members(ws.id, removing) if removing else 0
    ctx.invalidate(*(Invalidation("key", key_id) for key_id in revoked))
    return MembersDeleted(deleted_members_count=deleted)
