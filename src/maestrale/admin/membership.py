"""Workspace membership changes shared by users (accepted invitations), workspaces and groups."""

from __future__ import annotations

from typing import Literal

from maestrale.admin import roles as role_catalog
from maestrale.admin.workspaces.repository import WorkspaceAdminRepository
from maestrale.core.auth.tables import WorkspaceMember

Outcome = Literal["added", "updated", "unchanged"]


class Memberships:
    def __init__(self, workspaces: WorkspaceAdminRepository) -> None:
        self.workspaces = workspaces

    async def provision(
        self, workspace_id: str, user_id: str, roles: list[str], *, replace: bool
    ) -> Outcome:
        """Make `user_id` a member of the workspace with `roles`.

        `replace` sets the member's roles to exactly `roles`; otherwise they are added to the
        roles the member already has (a group assignment never takes a role away).
        """
        wanted = role_catalog.WORKSPACE.names(roles or [role_catalog.WS_DEFAULT])
        member = await self.workspaces.membership(workspace_id, user_id)
        if member is None:
            await self.workspaces.add(
                WorkspaceMember(workspace_id=workspace_id, user_id=user_id, roles=wanted)
            )
            return "added"
        current = role_catalog.WORKSPACE.names(member.roles or [])
        new = wanted if replace else current + [r for r in wanted if r not in current]
        if new == current:
            return "unchanged"
        member.roles = new
        await self.workspaces.flush()
        return "updated"
