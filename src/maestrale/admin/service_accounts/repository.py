"""SQL of service accounts, scoped to one workspace by construction: an account of another
workspace (or organization) is simply not found."""

from __future__ import annotations

from sqlalchemy import ColumnElement, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.admin.base_repository import contains
from maestrale.core.auth.tables import ApiKey, ServiceAccount
from maestrale.core.clock import utcnow


class ServiceAccountRepository:
    def __init__(self, session: AsyncSession, organization_id: str, workspace_id: str) -> None:
        self.session = session
        self.organization_id = organization_id
        self.workspace_id = workspace_id

    def _scoped(self) -> list[ColumnElement[bool]]:
        return [
            ServiceAccount.organization_id == self.organization_id,
            ServiceAccount.workspace_id == self.workspace_id,
        ]

    async def add(self, account: ServiceAccount) -> ServiceAccount:
        self.session.add(account)
        await self.session.flush()
        return account

    async def get(self, account_id: str, *, live: bool = False) -> ServiceAccount | None:
        stmt = select(ServiceAccount).where(ServiceAccount.id == account_id, *self._scoped())
        if live:
            stmt = stmt.where(ServiceAccount.deleted_at.is_(None))
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def name_taken(self, name: str) -> bool:
        stmt = select(ServiceAccount.id).where(
            *self._scoped(),
            ServiceAccount.deleted_at.is_(None),
            func.lower(ServiceAccount.name) == name.lower(),
        )
        return (await self.session.execute(stmt.limit(1))).first() is not None

    async def page(
        self,
        *,
        offset: int,
        limit: int,
        include_deleted: bool,
        q: str | None,
        descending: bool,
    ) -> list[ServiceAccount]:
        stmt = select(ServiceAccount).where(*self._scoped())
        if not include_deleted:
            stmt = stmt.where(ServiceAccount.deleted_at.is_(None))
        if q:
            pattern = contains(q)
            stmt = stmt.where(
                or_(
                    func.lower(ServiceAccount.name).like(pattern, escape="\\"),
                    func.lower(ServiceAccount.description).like(pattern, escape="\\"),
                )
            )
        order = (ServiceAccount.created_at, ServiceAccount.id)
        stmt = stmt.order_by(*(c.desc() for c in order) if descending else order)
        return list((await self.session.execute(stmt.offset(offset).limit(limit))).scalars())

    async def revoke_keys(self, account_id: str) -> list[str]:
        """Revoke the account's live keys; their ids (to drop from the key caches)."""
        live = (ApiKey.service_account_id == account_id, ApiKey.revoked_at.is_(None))
        ids = list((await self.session.execute(select(ApiKey.id).where(*live))).scalars())
        if ids:
            await self.session.execute(
                update(ApiKey).where(ApiKey.id.in_(ids)).values(revoked_at=utcnow())
            )
        return ids

    async def live_key_ids(self, account_id: str) -> list[str]:
        stmt = select(ApiKey.id).where(
            ApiKey.service_account_id == account_id, ApiKey.revoked_at.is_(None)
        )
        return list((await self.session.execute(stmt)).scalars())

    async def flush(self) -> None:
        await self.session.flush()
