"""SQL of the organization's standard (workspace) API keys. Creating a key goes through
`core.auth.repository.KeyRepository`, the one place a key's secret is made."""

from __future__ import annotations

from sqlalchemy import select, update

from maestrale.admin.base_repository import OrganizationRepository
from maestrale.core.auth.tables import ApiKey, Workspace
from maestrale.core.clock import utcnow


class StandardKeyRepository(OrganizationRepository):
    async def standard_keys(
        self, offset: int, limit: int | None
    ) -> list[tuple[ApiKey, str | None]]:
        """Live keys with the name of their workspace."""
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
