"""SQL of the admin domain, scoped to one organization by construction: an id of another
organization is simply not found."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Select, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.admin.tables import Invitation
from maestrale.core.auth.tables import ApiKey, User, Workspace, WorkspaceMember
from maestrale.core.clock import utcnow


def _like(value: str) -> str:
    escaped = value.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class OrganizationRepository:
    """Base of the admin repositories: every query is scoped to the admin key's organization."""

    def __init__(self, session: AsyncSession, organization_id: str) -> None:
        self.session = session
        self.organization_id = organization_id

    async def _count(self, stmt: Any) -> int:
        sub = stmt.order_by(None).subquery()
        return int((await self.session.execute(select(func.count()).select_from(sub))).scalar_one())


class AdminRepository(OrganizationRepository):
    # users

    def _users(self, email: str | None) -> Select[User]:
        stmt = select(User).where(User.organization_id == self.organization_id)
        if email:
            stmt = stmt.where(func.lower(User.email).like(_like(email), escape="\\"))
        return stmt

    async def users(self, email: str | None, offset: int, limit: int) -> list[User]:
        stmt = self._users(email).order_by(User.created_at, User.id).offset(offset).limit(limit)
        return list((await self.session.execute(stmt)).scalars())

    async def count_users(self, email: str | None) -> int:
        return await self._count(self._users(email))

    async def user(self, user_id: str) -> User | None:
        stmt = select(User).where(User.id == user_id, User.organization_id == self.organization_id)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def users_by_ids(self, user_ids: Iterable[str]) -> dict[str, User]:
        ids = list(set(user_ids))
        if not ids:
            return {}
        stmt = select(User).where(User.organization_id == self.organization_id, User.id.in_(ids))
        return {u.id: u for u in (await self.session.execute(stmt)).scalars()}

    async def users_by_emails(self, emails: Iterable[str]) -> dict[str, User]:
        wanted = list({e.lower() for e in emails})
        if not wanted:
            return {}
        stmt = select(User).where(
            User.organization_id == self.organization_id, func.lower(User.email).in_(wanted)
        )
        return {u.email.lower(): u for u in (await self.session.execute(stmt)).scalars()}

    async def org_admin_count(self, admin_names: Sequence[str]) -> int:
        users = await self.session.execute(
            select(User.roles).where(User.organization_id == self.organization_id)
        )
        return sum(1 for (roles,) in users if any(r in admin_names for r in roles or []))

    # invitations

    def _invitations(self, email: str | None) -> Select[Invitation]:
        stmt = select(Invitation).where(Invitation.organization_id == self.organization_id)
        if email:
            stmt = stmt.where(func.lower(Invitation.email).like(_like(email), escape="\\"))
        return stmt

    async def invitations(
        self, email: str | None = None, offset: int = 0, limit: int | None = None
    ) -> list[Invitation]:
        stmt = self._invitations(email).order_by(Invitation.created_at, Invitation.id)
        stmt = stmt.offset(offset)
        if limit is not None:
            stmt = stmt.limit(limit)
        return list((await self.session.execute(stmt)).scalars())

    async def count_invitations(self, email: str | None) -> int:
        return await self._count(self._invitations(email))

    async def invitation(self, invitation_id: str) -> Invitation | None:
        stmt = self._invitations(None).where(Invitation.id == invitation_id)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def invitations_by_emails(self, emails: Iterable[str]) -> dict[str, Invitation]:
        wanted = list({e.lower() for e in emails})
        if not wanted:
            return {}
        stmt = self._invitations(None).where(func.lower(Invitation.email).in_(wanted))
        return {i.email.lower(): i for i in (await self.session.execute(stmt)).scalars()}

    # workspaces

    def _workspaces(self, include_archived: bool, search: str | None) -> Select[Workspace]:
        stmt = select(Workspace).where(Workspace.organization_id == self.organization_id)
        if not include_archived:
            stmt = stmt.where(Workspace.archived_at.is_(None))
        if search:
            stmt = stmt.where(func.lower(Workspace.name).like(_like(search), escape="\\"))
        return stmt

    async def workspaces(
        self, include_archived: bool, search: str | None, offset: int, limit: int
    ) -> list[Workspace]:
        stmt = self._workspaces(include_archived, search)
        stmt = stmt.order_by(Workspace.created_at, Workspace.id).offset(offset).limit(limit)
        return list((await self.session.execute(stmt)).scalars())

    async def count_workspaces(self, include_archived: bool, search: str | None) -> int:
        return await self._count(self._workspaces(include_archived, search))

    async def workspace(self, workspace_id: str) -> Workspace | None:
        stmt = self._workspaces(True, None).where(Workspace.id == workspace_id)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def workspaces_by_ids(self, ids: Iterable[str]) -> dict[str, Workspace]:
        wanted = list(set(ids))
        if not wanted:
            return {}
        stmt = self._workspaces(True, None).where(Workspace.id.in_(wanted))
        return {w.id: w for w in (await self.session.execute(stmt)).scalars()}

    async def member_counts(self, workspace_ids: Iterable[str]) -> dict[str, int]:
        ids = list(workspace_ids)
        if not ids:
            return {}
        stmt = (
            select(WorkspaceMember.workspace_id, func.count())
            .where(WorkspaceMember.workspace_id.in_(ids))
            .group_by(WorkspaceMember.workspace_id)
        )
        return {ws: int(n) for ws, n in (await self.session.execute(stmt)).all()}

    async def membership(self, workspace_id: str, user_id: str) -> WorkspaceMember | None:
        return await self.session.get(WorkspaceMember, (workspace_id, user_id))

    async def memberships(self, workspace_id: str) -> dict[str, WorkspaceMember]:
        stmt = select(WorkspaceMember).where(WorkspaceMember.workspace_id == workspace_id)
        return {m.user_id: m for m in (await self.session.execute(stmt)).scalars()}

    async def workspaces_of_users(
        self, user_ids: Iterable[str]
    ) -> dict[str, list[tuple[Workspace, WorkspaceMember]]]:
        ids = list(user_ids)
        out: dict[str, list[tuple[Workspace, WorkspaceMember]]] = {i: [] for i in ids}
        if not ids:
            return out
        stmt = (
            select(Workspace, WorkspaceMember)
            .join(WorkspaceMember, WorkspaceMember.workspace_id == Workspace.id)
            .where(
                WorkspaceMember.user_id.in_(ids),
                Workspace.organization_id == self.organization_id,
                Workspace.archived_at.is_(None),
            )
            .order_by(Workspace.created_at, Workspace.id)
        )
        for ws, member in await self.session.execute(stmt):
            out[member.user_id].append((ws, member))
        return out

    async def remove_members(self, workspace_id: str, user_ids: Iterable[str]) -> int:
        result = await self.session.execute(
            delete(WorkspaceMember).where(
                WorkspaceMember.workspace_id == workspace_id,
                WorkspaceMember.user_id.in_(list(user_ids)),
            )
        )
        return int(getattr(result, "rowcount", 0) or 0)

    # keys

    async def standard_keys(
        self, offset: int, limit: int | None
    ) -> list[tuple[ApiKey, str | None]]:
        stmt = (
            select(ApiKey, Workspace.name)
            .outerjoin(Workspace, Workspace.id == ApiKey.workspace_id)
            .where(
                ApiKey.organization_id == self.organization_id,
                ApiKey.kind == "standard",
                ApiKey.revoked_at.is_(None),
            )
            .order_by(ApiKey.created_at, ApiKey.id)
            .offset(offset)
        )
        if limit is not None:
            stmt = stmt.limit(limit)
        return [(key, name) for key, name in await self.session.execute(stmt)]

    async def live_standard_key(self, key_id: str) -> ApiKey | None:
        stmt = select(ApiKey).where(
            ApiKey.id == key_id,
            ApiKey.organization_id == self.organization_id,
            ApiKey.kind == "standard",
            ApiKey.revoked_at.is_(None),
        )
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def revoke_keys(
        self, *, user_id: str | None = None, workspace_id: str | None = None
    ) -> list[str]:
        """Revoke the live keys of a user (in one workspace, or all); their ids."""
        conditions = [ApiKey.organization_id == self.organization_id, ApiKey.revoked_at.is_(None)]
        if user_id is not None:
            conditions.append(ApiKey.user_id == user_id)
        if workspace_id is not None:
            conditions.append(ApiKey.workspace_id == workspace_id)
        ids = list((await self.session.execute(select(ApiKey.id).where(*conditions))).scalars())
        if ids:
            await self.session.execute(
                update(ApiKey).where(ApiKey.id.in_(ids)).values(revoked_at=utcnow())
            )
        return ids
