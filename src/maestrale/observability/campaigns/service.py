"""Campaigns: create-and-start (select the matching events, newest first, up to max_nb_events,
then enqueue the durable judging job), get, list, status, selected events, soft delete."""

from __future__ import annotations

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.observability.budget import DEFAULT_BUDGET
from maestrale.observability.campaigns.repository import CampaignRepository
from maestrale.observability.campaigns.schemas import CampaignCreate, CampaignOut
from maestrale.observability.campaigns.tables import Campaign
from maestrale.observability.campaigns.tasks import KIND
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.events.repository import ChatCompletionEventRepository
from maestrale.observability.filters import compile_filters, compile_scan
from maestrale.observability.judges.repository import JudgeRepository
from maestrale.observability.judges.schemas import JudgeOut
from maestrale.observability.judges.service import JudgeService, definition_of
from maestrale.observability.pages import page_links

ATTEMPTS = 5


class CampaignService:
    def __init__(
        self, repo: CampaignRepository, queue: JobQueue, *, search_budget: float = DEFAULT_BUDGET
    ) -> None:
        self.repo = repo
        self.queue = queue
        self.search_budget = search_budget
        self.session = repo.session
        self.tenant: Tenant = repo.tenant
        self.judges = JudgeRepository(self.session, self.tenant)

    async def create(self, body: CampaignCreate, principal: Principal) -> Campaign:
        judge = await JudgeService(self.judges).get(body.judge_id)
        events = ChatCompletionEventRepository(self.session, self.tenant, budget=self.search_budget)
        where = compile_filters(body.search_params, events.dialect)
        scan = compile_scan(body.search_params, events.dialect)
        ids = await events.newest_ids(where, body.max_nb_events, scan=scan)
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
        await self.repo.select_events(campaign, ids)
        job = await self.queue.enqueue(
            self.session,
            KIND,
            {"campaign_id": campaign.id},
            tenant=self.tenant,
            max_attempts=ATTEMPTS,
            dedupe_key=f"campaign:{campaign.id}",
        )
        campaign.job_id = job.id
        await self.repo.flush()
        return campaign

    async def get(self, campaign_id: str) -> Campaign:
        campaign = await self.repo.alive_by_id(campaign_id)
        if campaign is None:
            raise ObservabilityError(
                f"campaign {campaign_id!r} not found", "CAMPAIGN_NOT_FOUND", status_code=404
            )
        return campaign

    async def out(self, campaign: Campaign) -> CampaignOut:
        # The judge as it is now, deleted or not (its definition at the start is the run's).
        judge = await self.judges.get(campaign.judge_id)
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
        rows, count = await self.repo.page(q, page.offset, page.limit)
        return rows, count, *page_links("/v1/observability/campaigns", page, count)

    async def delete(self, campaign_id: str) -> None:
        campaign = await self.get(campaign_id)
        campaign.deleted_at = campaign.updated_at = utcnow()
        await self.repo.flush()

    async def selected_events(
        self, campaign_id: str, page: PageParams
    ) -> tuple[list[ChatCompletionEvent], int, str | None, str | None]:
        campaign = await self.get(campaign_id)
        count = await self.repo.count_events(campaign.id)
        rows = await self.repo.selected_events(campaign.id, page.offset, page.limit)
        url = f"/v1/observability/campaigns/{campaign.id}/selected-events"
        return rows, count, *page_links(url, page, count)
