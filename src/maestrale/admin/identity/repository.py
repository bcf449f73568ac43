"""SQL of the identity routes: the rows a key names, and its user's workspaces."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.tables import (
    ApiKey,
    Organization,
    ServiceAccount,
    User,
    Workspace,
    WorkspaceMember,
)


class IdentityRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def key(self, key_id: str) -> ApiKey | None:
        return await self.session.get(ApiKey, key_id)

    async def user(self, user_id: str) -> User | None:
        return await self.session.get(User, user_id)

    async def account(self, account_id: str) -> ServiceAccount | None:
        return await self.session.get(ServiceAccount, account_id)

    async def organization(self, organization_id: str) -> Organization | None:
        return await self.session.get(Organization, organization_id)

    async def workspace(self, workspace_id: str) -> Workspace | None:
        return await self.session.get(Workspace, workspace_id)

    async def member_workspaces(
        self, organization_id: str, user_id: str, offset: int, limit: int
    ) -> list[Workspace]:
        """The live workspaces of the organization the user is a member of, oldest first."""
        stmt = (
            select(Workspace)
            .join(WorkspaceMember, WorkspaceMember.workspace_id == Workspace.id)
            .where(
                WorkspaceMember.user_id == user_id,
                Workspace.organization_id == organization_id,
                Workspace.archived_at.is_(None),
            )
            .order_by(Workspace.created_at, Workspace.id)
            .offset(offset)
            .limit(limit)
        )
        return list((await self.session.execute(stmt)).scalars())
