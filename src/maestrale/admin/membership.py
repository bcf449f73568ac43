"""Workspace membership changes shared by users (accepted invitations), workspaces and groups."""

from __future__ import annotations

from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.admin import roles as R
from maestrale.core.auth.tables import WorkspaceMember

Outcome = Literal["added", "updated", "unchanged"]


async def provision(
    session: AsyncSession,
    workspace_id: str,
    user_id: str,
    roles: list[str],
    *,
    replace: bool,
) -> Outcome:
    """Make `user_id` a member of the workspace with `roles`.

    `replace` sets the member's roles to exactly `roles`; otherwise they are added to the roles
    the member already has (a group assignment never takes a role away).
    """
    wanted = R.WORKSPACE.names(roles or [R.WS_DEFAULT])
    member = await session.get(WorkspaceMember, (workspace_id, user_id))
    if member is None:
        session.add(WorkspaceMember(workspace_id=workspace_id, user_id=user_id, roles=wanted))
        await session.flush()
        return "added"
    current = R.WORKSPACE.names(member.roles or [])
    new = wanted if replace else current + [r for r in wanted if r not in current]
    if new == current:
        return "unchanged"
    member.roles = new
    await session.flush()
    return "updated"
