"""SQL of the organization's workspaces and their members."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Select, delete, func, select

from maestrale.admin.base_repository import OrganizationRepository, contains
from maestrale.core.auth.tables import Workspace, WorkspaceMember


class WorkspaceAdminRepository(OrganizationRepository):
    def _workspaces(self, include_archived: bool, search: str | None) -> Select[Workspace]:
        stmt = select(Workspace).where(Workspace.organization_id == self.organization_id)
        if not include_archived:
            stmt = stmt.where(Workspace.archived_at.is_(None))
        if search:
            stmt = stmt.where(func.lower(Workspace.name).like(contains(search), escape="\\"))
        return stmt

    async def workspaces(
        self, include_archived: bool, search: str | None, offset: int, limit: int
    ) -> list[Workspace]:
        stmt = self._workspaces(include_archived, search)
        stmt = stmt.order_by(Workspace.created_at, Workspace.id).offset(offset).limit(limit)
        return list((await self.session.execute(stmt)).scalars())

    async def count_workspaces(self, include_archived: bool, search: str | None) -> int:
        return await self.count(self._workspaces(include_archived, search))

    async def workspace(self, workspace_id: str) -> Workspace | None:
        stmt = self._workspaces(True, None).where(Workspace.id == workspace_id)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def workspaces_by_ids(self, ids: Iterable[str]) -> dict[str, Workspace]:
        wanted = list(set(ids))
        if not wanted:
            return {}
        stmt = self._workspaces(True, None).where(Workspace.id.in_(wanted))
        return {w.id: w for w in (await self.session.execute(stmt)).scalars()}

    # members

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
        """The live workspaces of each user, with their membership."""
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
