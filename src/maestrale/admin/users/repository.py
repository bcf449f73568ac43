"""SQL of the organization's members and pending invitations."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Select, func, select

from maestrale.admin.base_repository import OrganizationRepository, contains
from maestrale.admin.users.tables import Invitation
from maestrale.core.auth.tables import User


class UserRepository(OrganizationRepository):
    def _users(self, email: str | None) -> Select[User]:
        stmt = select(User).where(User.organization_id == self.organization_id)
        if email:
            stmt = stmt.where(func.lower(User.email).like(contains(email), escape="\\"))
        return stmt

    async def users(self, email: str | None, offset: int, limit: int) -> list[User]:
        stmt = self._users(email).order_by(User.created_at, User.id).offset(offset).limit(limit)
        return list((await self.session.execute(stmt)).scalars())

    async def count_users(self, email: str | None) -> int:
        return await self.count(self._users(email))

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
            stmt = stmt.where(func.lower(Invitation.email).like(contains(email), escape="\\"))
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
        return await self.count(self._invitations(email))

    async def invitation(self, invitation_id: str) -> Invitation | None:
        stmt = self._invitations(None).where(Invitation.id == invitation_id)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def invitations_by_emails(self, emails: Iterable[str]) -> dict[str, Invitation]:
        wanted = list({e.lower() for e in emails})
        if not wanted:
            return {}
        stmt = self._invitations(None).where(func.lower(Invitation.email).in_(wanted))
        return {i.email.lower(): i for i in (await self.session.execute(stmt)).scalars()}
