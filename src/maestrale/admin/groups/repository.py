"""SQL of user groups, their members and their workspace assignments."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Select, delete, func, select

from maestrale.admin.base_repository import OrganizationRepository, contains
from maestrale.admin.groups.tables import UserGroup, UserGroupMember, UserGroupWorkspace
from maestrale.core.auth.tables import User, Workspace


class GroupRepository(OrganizationRepository):
    def _groups(self, search: str | None) -> Select[UserGroup]:
        stmt = select(UserGroup).where(UserGroup.organization_id == self.organization_id)
        if search:
            stmt = stmt.where(func.lower(UserGroup.name).like(contains(search), escape="\\"))
        return stmt

    async def groups(self, search: str | None, offset: int, limit: int) -> list[UserGroup]:
        stmt = self._groups(search).order_by(UserGroup.created_at, UserGroup.id)
        return list((await self.session.execute(stmt.offset(offset).limit(limit))).scalars())

    async def count_groups(self, search: str | None) -> int:
        return await self.count(self._groups(search))

    async def group(self, group_id: str) -> UserGroup | None:
        stmt = self._groups(None).where(UserGroup.id == group_id)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def group_by_name(self, name: str) -> UserGroup | None:
        stmt = self._groups(None).where(UserGroup.name == name)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def existing_ids(self, group_ids: Iterable[str]) -> set[str]:
        ids = list(set(group_ids))
        if not ids:
            return set()
        stmt = select(UserGroup.id).where(
            UserGroup.organization_id == self.organization_id, UserGroup.id.in_(ids)
        )
        return set((await self.session.execute(stmt)).scalars())

    # members

    def _members(self, group_id: str) -> Select[User]:
        return (
            select(User)
            .join(UserGroupMember, UserGroupMember.user_id == User.id)
            .where(UserGroupMember.group_id == group_id)
        )

    async def members(self, group_id: str, offset: int, limit: int) -> list[User]:
        stmt = self._members(group_id).order_by(UserGroupMember.created_at, User.id)
        return list((await self.session.execute(stmt.offset(offset).limit(limit))).scalars())

    async def count_members(self, group_id: str) -> int:
        return await self.count(self._members(group_id))

    async def member_ids(self, group_id: str) -> list[str]:
        stmt = select(UserGroupMember.user_id).where(UserGroupMember.group_id == group_id)
        return list((await self.session.execute(stmt)).scalars())

    async def add_member(self, group_id: str, user_id: str) -> None:
        self.session.add(UserGroupMember(group_id=group_id, user_id=user_id))
        await self.session.flush()

    async def remove_members(self, group_id: str, user_ids: list[str]) -> int:
        result = await self.session.execute(
            delete(UserGroupMember).where(
                UserGroupMember.group_id == group_id, UserGroupMember.user_id.in_(user_ids)
            )
        )
        return int(getattr(result, "rowcount", 0) or 0)

    # workspace assignments

    def _assignments(self, group_id: str) -> Select[UserGroupWorkspace, Workspace]:
        return (
            select(UserGroupWorkspace, Workspace)
            .join(Workspace, Workspace.id == UserGroupWorkspace.workspace_id)
            .where(UserGroupWorkspace.group_id == group_id)
        )

    async def assignments(
        self, group_id: str, offset: int = 0, limit: int | None = None
    ) -> list[tuple[UserGroupWorkspace, Workspace]]:
        stmt = self._assignments(group_id).order_by(
            UserGroupWorkspace.created_at, UserGroupWorkspace.workspace_id
        )
        stmt = stmt.offset(offset)
        if limit is not None:
            stmt = stmt.limit(limit)
        return [(row, ws) for row, ws in await self.session.execute(stmt)]

    async def count_assignments(self, group_id: str) -> int:
        return await self.count(self._assignments(group_id))

    async def assignment(self, group_id: str, workspace_id: str) -> UserGroupWorkspace | None:
        return await self.session.get(UserGroupWorkspace, (group_id, workspace_id))
