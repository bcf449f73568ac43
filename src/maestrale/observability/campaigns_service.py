"""Campaigns: create-and-start (select the matching events, newest first, up to max_nb_events,
then enqueue the durable judging job), get, list, status, selected events, soft delete."""

from __future__ import annotations

from sqlalchemy import Select, desc, func, insert, select

from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.repository import WorkspaceRepository
from maestrale.observability.campaigns_schemas import CampaignCreate, CampaignOut
from maestrale.observability.datasets_service import page_links
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.filters import compile_filters
from maestrale.observability.judges_schemas import JudgeOut
from maestrale.observability.judges_service import JudgeRepository, JudgeService, definition_of
from maestrale.observability.tables import Campaign, CampaignEvent, Judge
from maestrale.observability.tables import ChatCompletionEvent as E

KIND = "observability.campaign"
ATTEMPTS = 5


class CampaignRepository(WorkspaceRepository[Campaign]):
    model = Campaign

    def alive(self) -> Select[Campaign]:
        return self.select().where(Campaign.deleted_at.is_(None))


class CampaignService:
    def __init__(self, repo: CampaignRepository, queue: JobQueue) -> None:
        self.repo = repo
        self.queue = queue
        self.session = repo.session
        self.tenant: Tenant = repo.tenant

    async def create(self, body: CampaignCreate, principal: Principal) -> Campaign:
        judge = await JudgeService(JudgeRepository(self.session, self.tenant)).get(body.judge_id)
        dialect = self.session.get_bind().dialect.name
        where = compile_filters(body.search_params, dialect)
        selected = select(E.id).where(E.workspace_id == self.tenant.workspace_id, where)
        ids = list(
            (
                await self.session.execute(
                    selected.order_by(desc(E.created_at), desc(E.id)).limit(body.max_nb_events)
                )
            ).scalars()
        )
        if not ids:
            raise ObservabilityError(
                "no event matches the campaign's search_params", "CAMPAIGN_NO_MATCHING_EVENTS"
            )
        campaign = await self.repo.add(
            Campaign(
                id=new_id(),
                name=body.name,
                description=body.description,
                owner_id=principal.user_id or principal.key_id,
                key_id=principal.key_id,
                user_id=principal.user_id,
                judge_id=judge.id,
                judge_definition=definition_of(judge).model_dump(),
                max_nb_events=body.max_nb_events,
                search_params=body.search_params.model_dump(),
                status="RUNNING",
            )
        )
        await self.session.execute(
            insert(CampaignEvent),
            [{"campaign_id": campaign.id, "event_id": e, "position": i} for i, e in enumerate(ids)],
        )
        job = await self.queue.enqueue(
            self.session,
            KIND,
            {"campaign_id": campaign.id},
            tenant=self.tenant,
            max_attempts=ATTEMPTS,
            dedupe_key=f"campaign:{campaign.id}",
        )
        campaign.job_id = job.id
        await self.session.flush()
        return campaign

    async def get(self, campaign_id: str) -> Campaign:
        found = await self.repo.list(self.repo.alive().where(Campaign.id == campaign_id))
        if not found:
            raise ObservabilityError(
                f"campaign {campaign_id!r} not found", "CAMPAIGN_NOT_FOUND", status_code=404
            )
        return found[0]

    async def out(self, campaign: Campaign) -> CampaignOut:
        judge = await self.session.get(Judge, campaign.judge_id)
        assert judge is not None  # the foreign key cascades
        return CampaignOut(
            id=campaign.id,
            created_at=campaign.created_at,
            updated_at=campaign.updated_at,
            deleted_at=campaign.deleted_at,
            name=campaign.name,
            owner_id=campaign.owner_id,
            workspace_id=campaign.workspace_id,
            description=campaign.description,
            max_nb_events=campaign.max_nb_events,
            search_params=campaign.search_params,
            judge=JudgeOut.model_validate(judge),
        )

    async def list_campaigns(
        self, page: PageParams, q: str | None
    ) -> tuple[list[Campaign], int, str | None, str | None]:
        stmt = self.repo.alive()
        if q:
            stmt = stmt.where(Campaign.name.icontains(q, autoescape=True))
        count = await self.repo.count(stmt)
        stmt = stmt.order_by(desc(Campaign.created_at), desc(Campaign.id))
        rows = await self.repo.list(stmt.offset(page.offset).limit(page.limit))
        return rows, count, *page_links("/v1/observability/campaigns", page, count)

    async def delete(self, campaign_id: str) -> None:
        campaign = await self.get(campaign_id)
        campaign.deleted_at = campaign.updated_at = utcnow()
        await self.session.flush()

    async def selected_events(
        self, campaign_id: str, page: PageParams
    ) -> tuple[list[E], int, str | None, str | None]:
        campaign = await self.get(campaign_id)
        base = (
            select(E)
            .join(CampaignEvent, CampaignEvent.event_id == E.id)
            .where(
                CampaignEvent.campaign_id == campaign.id,
                E.workspace_id == self.tenant.workspace_id,
            )
        )
        counted = select(func.count()).where(CampaignEvent.campaign_id == campaign.id)
        count = int((await self.session.execute(counted)).scalar_one())
        stmt = base.order_by(CampaignEvent.position).offset(page.offset).limit(page.limit)
        rows = list((await self.session.execute(stmt)).scalars())
        url = f"/v1/observability/campaigns/{campaign.id}/selected-events"
        return rows, count, *page_links(url, page, count)
