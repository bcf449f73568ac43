"""SQL of the limits: an organization's overrides, and the recorded usage that seeds counters."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.accounting.tables import UsageRecord
from maestrale.core.clock import utcnow
from maestrale.limits.tables import ModelTokenLimit, OrganizationLimits


class LimitsRepository:
    def __init__(self, session: AsyncSession, organization_id: str) -> None:
        self.session = session
        self.organization_id = organization_id

    async def overrides(self) -> OrganizationLimits | None:
        return await self.session.get(OrganizationLimits, self.organization_id)

    async def model_overrides(self) -> list[ModelTokenLimit]:
        stmt = select(ModelTokenLimit).where(
            ModelTokenLimit.organization_id == self.organization_id
        )
        return list((await self.session.execute(stmt.order_by(ModelTokenLimit.model))).scalars())

    async def upsert(self) -> OrganizationLimits:
        row = await self.overrides()
        if row is None:
            row = OrganizationLimits(organization_id=self.organization_id)
            self.session.add(row)
        row.updated_at = utcnow()
        return row

    async def upsert_model(self, model: str) -> ModelTokenLimit:
        row = await self.session.get(ModelTokenLimit, (self.organization_id, model))
        if row is None:
            row = ModelTokenLimit(organization_id=self.organization_id, model=model)
            self.session.add(row)
        row.updated_at = utcnow()
        return row

    async def delete_model(self, model: str) -> bool:
        result = await self.session.execute(
            delete(ModelTokenLimit).where(
                ModelTokenLimit.organization_id == self.organization_id,
                ModelTokenLimit.model == model,
            )
        )
        return bool(getattr(result, "rowcount", 0))

    async def cost_since(self, since: datetime) -> float:
        stmt = select(func.coalesce(func.sum(UsageRecord.cost), 0.0)).where(
            UsageRecord.organization_id == self.organization_id, UsageRecord.created_at >= since
        )
        return float((await self.session.execute(stmt)).scalar_one())


async def workspace_tokens_since(
    session: AsyncSession, workspace_id: str, models: Sequence[str], since: datetime
) -> int:
    """Tokens a workspace used with any of these model names (ids and aliases) since `since`."""
    stmt = select(func.coalesce(func.sum(UsageRecord.total_tokens), 0)).where(
        UsageRecord.workspace_id == workspace_id,
        UsageRecord.created_at >= since,
        UsageRecord.model.in_(list(models)),
    )
    return int((await session.execute(stmt)).scalar_one())
