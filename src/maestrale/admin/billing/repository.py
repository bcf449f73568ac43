"""SQL of an organization's usage report: what the gateway recorded (`usage_records`), summed
per endpoint, model and workspace. Limits and their overrides are read and written through
`limits.repository.LimitsRepository`."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, select

from maestrale.accounting.tables import UsageRecord
from maestrale.admin.base_repository import OrganizationRepository
from maestrale.core.auth.tables import Organization


class UsageTotal(NamedTuple):
    endpoint: str
    model: str
    workspace_id: str | None
    prompt_tokens: int
    completion_tokens: int
    cost: float
    calls: int
    pages: int = 0


class BillingRepository(OrganizationRepository):
    async def usage_totals(
        self, start: datetime, end: datetime, workspace_id: str | None
    ) -> list[UsageTotal]:
        """Usage recorded in [start, end), per endpoint, model and workspace (all the
        organization's workspaces, or one)."""
        conditions = [
            UsageRecord.organization_id == self.organization_id,
            UsageRecord.created_at >= start,
            UsageRecord.created_at < end,
        ]
        if workspace_id is not None:
            conditions.append(UsageRecord.workspace_id == workspace_id)
        stmt = (
            select(
                UsageRecord.endpoint,
                UsageRecord.model,
                UsageRecord.workspace_id,
                func.sum(UsageRecord.prompt_tokens),
                func.sum(UsageRecord.completion_tokens),
                func.sum(UsageRecord.cost),
                func.count(),
                func.sum(UsageRecord.pages),
            )
            .where(*conditions)
            .group_by(UsageRecord.endpoint, UsageRecord.model, UsageRecord.workspace_id)
            .order_by(UsageRecord.model, UsageRecord.workspace_id)
        )
        rows = await self.session.execute(stmt)
        return [
            UsageTotal(
                endpoint,
                model,
                ws_id,
                int(prompt or 0),
                int(completion or 0),
                float(cost or 0.0),
                int(calls),
                int(pages or 0),
            )
            for endpoint, model, ws_id, prompt, completion, cost, calls, pages in rows
        ]

    async def organization_created_at(self) -> datetime | None:
        org = await self.session.get(Organization, self.organization_id)
        return None if org is None else org.created_at
