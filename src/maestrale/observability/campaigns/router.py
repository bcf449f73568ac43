"""Campaigns: a judge run over selected events (beta observability)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Response

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import CurrentTenant, StandardAuth
from maestrale.core.dependencies import Db
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work
from maestrale.observability.campaigns.repository import CampaignRepository
from maestrale.observability.campaigns.schemas import (
    CampaignCreate,
    CampaignList,
    CampaignOut,
    CampaignPage,
    CampaignStatus,
    SelectedEvents,
    SelectedEventsPage,
)
from maestrale.observability.campaigns.service import CampaignService
from maestrale.observability.errors import observability_router
from maestrale.observability.events.schemas import preview

router = observability_router(prefix="/observability", tags=["observability"])


def campaign_service(
    work: Work, tenant: CurrentTenant, db: Db, settings: AppSettings
) -> CampaignService:
    return CampaignService(
        CampaignRepository(work.session, tenant),
        JobQueue(db),
        search_budget=settings.observability_search_timeout,
    )


Campaigns = Annotated[CampaignService, Depends(campaign_service)]


@router.get("/campaigns")
async def list_campaigns(
    campaigns: Campaigns,
    page_size: Annotated[int, Query()] = 50,
    page: Annotated[int, Query()] = 1,
    q: Annotated[str | None, Query()] = None,
) -> CampaignList:
    """The workspace's campaigns, newest first, in numbered pages; `q` keeps those whose name
    contains it (case-insensitive)."""
    rows, count, nxt, prev = await campaigns.list_campaigns(
        PageParams(page, page_size, first_page=1), q
    )
    results = [await campaigns.out(r) for r in rows]
    return CampaignList(
        campaigns=CampaignPage(count=count, results=results, next=nxt, previous=prev)
    )


@router.post("/campaigns", status_code=201)
async def create_campaign(
    body: CampaignCreate, campaigns: Campaigns, principal: StandardAuth
) -> CampaignOut:
    """Create and start a campaign: select the newest events matching `search_params` (at most
    `max_nb_events`) and judge them one by one with the judge, in a background job. Follow it
    with `status`."""
    return await campaigns.out(await campaigns.create(body, principal))


@router.get("/campaigns/{campaign_id}")
async def get_campaign(campaign_id: str, campaigns: Campaigns) -> CampaignOut:
    """One campaign, with its judge."""
    return await campaigns.out(await campaigns.get(campaign_id))


@router.delete("/campaigns/{campaign_id}", status_code=204)
async def delete_campaign(campaign_id: str, campaigns: Campaigns) -> Response:
    """Delete a campaign; its job stops before the next event."""
    await campaigns.delete(campaign_id)
    return Response(status_code=204)


@router.get("/campaigns/{campaign_id}/status")
async def campaign_status(campaign_id: str, campaigns: Campaigns) -> CampaignStatus:
    """The campaign's status: RUNNING, then COMPLETED once every event is judged (FAILED when
    its job gave up)."""
    campaign = await campaigns.get(campaign_id)
    return CampaignStatus(status=campaign.status)


@router.get("/campaigns/{campaign_id}/selected-events")
async def selected_events(
    campaign_id: str,
    campaigns: Campaigns,
    page_size: Annotated[int, Query()] = 50,
    page: Annotated[int, Query()] = 1,
) -> SelectedEvents:
    """The events the campaign selected, in selection order (newest first at creation), in
    numbered pages."""
    rows, count, nxt, prev = await campaigns.selected_events(
        campaign_id, PageParams(page, page_size, first_page=1)
    )
    return SelectedEvents(
        completion_events=SelectedEventsPage(
            count=count, results=[preview(r) for r in rows], next=nxt, previous=prev
        )
    )
