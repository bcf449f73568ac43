"""All SQL of campaigns and of their selected events (with their verdicts), scoped to the
caller's workspace. A campaign's events have no workspace of their own: they are reached
through their campaign, which has one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, desc, exists, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.accounting.tables import ChatCompletionEvent as E
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.repository import WorkspaceRepository
from maestrale.observability.campaigns.tables import Campaign, CampaignEvent


async def campaign_tenant(session: AsyncSession, campaign_id: str) -> Tenant | None:
    """The workspace of a campaign, for its job: the job holds only the campaign's id, and every
    query it makes next is scoped to this workspace."""
    stmt = select(Campaign.organization_id, Campaign.workspace_id).where(Campaign.id == campaign_id)
    row = (await session.execute(stmt)).one_or_none()
    return None if row is None else Tenant(row[0], row[1])


class CampaignRepository(WorkspaceRepository[Campaign]):
    model = Campaign

    def alive(self) -> Select[Campaign]:
        return self.select().where(Campaign.deleted_at.is_(None))

    def _own(self, campaign_id: str) -> ColumnElement[bool]:
        """The condition on CampaignEvent: of this campaign, if the campaign is the
        workspace's."""
        mine = exists().where(
            Campaign.id == campaign_id, Campaign.workspace_id == self.tenant.workspace_id
        )
        return and_(CampaignEvent.campaign_id == campaign_id, mine)

    async def alive_by_id(self, campaign_id: str) -> Campaign | None:
        found = await self.list(self.alive().where(Campaign.id == campaign_id))
        return found[0] if found else None

    async def page(self, q: str | None, offset: int, limit: int) -> tuple[list[Campaign], int]:
        """A page of the live campaigns, newest first, and their total."""
        stmt = self.alive()
        if q:
            stmt = stmt.where(Campaign.name.icontains(q, autoescape=True))
        count = await self.count(stmt)
        stmt = stmt.order_by(desc(Campaign.created_at), desc(Campaign.id))
        return await self.list(stmt.offset(offset).limit(limit)), count

    async def flush(self) -> None:
        await self.session.flush()

    # -- selected events -------------------------------------------------------------------
    async def select_events(self, campaign: Campaign, event_ids: Sequence[str]) -> None:
        """Record the campaign's selected events, in this order."""
        assert campaign.workspace_id == self.tenant.workspace_id
        await self.session.execute(
            insert(CampaignEvent),
            [
                {"campaign_id": campaign.id, "event_id": e, "position": i}
                for i, e in enumerate(event_ids)
            ],
        )

    async def count_events(self, campaign_id: str) -> int:
        stmt = select(func.count()).where(self._own(campaign_id))
        return int((await self.session.execute(stmt)).scalar_one())

    async def selected_events(self, campaign_id: str, offset: int, limit: int) -> list[E]:
        """A page of the campaign's events that still exist, in selection order."""
        stmt = (
            select(E)
            .join(CampaignEvent, CampaignEvent.event_id == E.id)
            .where(self._own(campaign_id), E.workspace_id == self.tenant.workspace_id)
            .order_by(CampaignEvent.position)
            .offset(offset)
            .limit(limit)
        )
        return list((await self.session.execute(stmt)).scalars())

    async def verdicts(
        self, campaign_id: str, after_position: int, limit: int
    ) -> list[tuple[CampaignEvent, E | None]]:
        """The campaign's events after a position, in selection order, each with its event
        (None once the event no longer exists)."""
        stmt = (
            select(CampaignEvent, E)
            .outerjoin(
                E, (E.id == CampaignEvent.event_id) & (E.workspace_id == self.tenant.workspace_id)
            )
            .where(self._own(campaign_id), CampaignEvent.position > after_position)
            .order_by(CampaignEvent.position)
            .limit(limit)
        )
        return [(verdict, event) for verdict, event in (await self.session.execute(stmt)).all()]

    # -- the judging job -------------------------------------------------------------------
    async def next_unjudged(self, campaign_id: str) -> str | None:
        """The first event, in selection order, without a verdict."""
        stmt = (
            select(CampaignEvent.event_id)
            .where(self._own(campaign_id), CampaignEvent.judged_at.is_(None))
            .order_by(CampaignEvent.position)
            .limit(1)
        )
        event_id: str | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return event_id

    async def save_verdict(self, campaign_id: str, event_id: str, values: dict[str, Any]) -> None:
        """Set an event's verdict, unless it has one already (then nothing changes)."""
        await self.session.execute(
            update(CampaignEvent)
            .where(
                self._own(campaign_id),
                CampaignEvent.event_id == event_id,
                CampaignEvent.judged_at.is_(None),
            )
            .values(**values, judged_at=utcnow())
            .execution_options(synchronize_session=False)
        )

    async def set_status(self, campaign_id: str, status: str) -> None:
        await self.session.execute(
            update(Campaign)
            .where(Campaign.id == campaign_id, Campaign.workspace_id == self.tenant.workspace_id)
            .values(status=status, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
