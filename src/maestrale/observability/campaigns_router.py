"""Campaigns: a judge run over selected events (beta observability)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from maestrale.core.auth.dependencies import CurrentTenant, StandardAuth
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.routing import DbSession
from maestrale.observability.campaigns_schemas import (
    CampaignCreate,
    CampaignList,
    CampaignOut,
    CampaignPage,
    CampaignStatus,
    SelectedEvents,
    SelectedEventsPage,
)
from maestrale.observability.campaigns_service import CampaignRepository, CampaignService
from maestrale.observability.errors import observability_router
from maestrale.observability.events_schemas import preview

router = observability_router(prefix="/observability", tags=["observability"])


def _service(request: Request, session: DbSession, tenant: CurrentTenant) -> CampaignService:
    return CampaignService(CampaignRepository(session, tenant), JobQueue(request.app.state.db))


@router.get("/campaigns")
async def list_campaigns(
    request: Request,
    session: DbSession,
    tenant: CurrentTenant,
    page_size: Annotated[int, Query()] = 50,
    page: Annotated[int, Query()] = 1,
    q: Annotated[str | None, Query()] = None,
) -> CampaignList:
    service = _service(request, session, tenant)
    rows, count, nxt, prev = await service.list_campaigns(
        PageParams(page, page_size, first_page=1), q
    )
    results = [await service.out(r) for r in rows]
    return CampaignList(
        campaigns=CampaignPage(count=count, results=results, next=nxt, previous=prev)
    )


@router.post("/campaigns", status_code=201)
async def create_campaign(
    body: CampaignCreate,
    request: Request,
    session: DbSession,
    tenant: CurrentTenant,
    principal: StandardAuth,
) -> CampaignOut:
    service = _service(request, session, tenant)
    return await service.out(await service.create(body, principal))


@router.get("/campaigns/{campaign_id}")
async def get_campaign(
    campaign_id: str, request: Request, session: DbSession, tenant: CurrentTenant
) -> CampaignOut:
    service = _service(request, session, tenant)
    return await service.out(await service.get(campaign_id))


@router.delete("/campaigns/{campaign_id}", status_code=204)
async def delete_campaign(
    campaign_id: str, request: Request, session: DbSession, tenant: CurrentTenant
) -> Response:
    await _service(request, session, tenant).delete(campaign_id)
    return Response(status_code=204)


@router.get("/campaigns/{campaign_id}/status")
async def campaign_status(
    campaign_id: str, request: Request, session: DbSession, tenant: CurrentTenant
) -> CampaignStatus:
    campaign = await _service(request, session, tenant).get(campaign_id)
    return CampaignStatus(status=campaign.status)


@router.get("/campaigns/{campaign_id}/selected-events")
async def selected_events(
    campaign_id: str,
    request: Request,
    session: DbSession,
    tenant: CurrentTenant,
    page_size: Annotated[int, Query()] = 50,
    page: Annotated[int, Query()] = 1,
) -> SelectedEvents:
    rows, count, nxt, prev = await _service(request, session, tenant).selected_events(
        campaign_id, PageParams(page, page_size, first_page=1)
    )
    return SelectedEvents(
        completion_events=SelectedEventsPage(
            count=count, results=[preview(r) for r in rows], next=nxt, previous=prev
        )
    )
