"""Chat completion events and their searchable fields (beta observability)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query, Request
from fastapi.responses import StreamingResponse

from maestrale.completions.dependencies import CallerDep, GatewayDep
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.routing import DbSession
from maestrale.observability.errors import observability_router
from maestrale.observability.events_schemas import (
    FeedOut,
    FieldOptionCountsRequest,
    SearchEventsOut,
    SearchEventsRequest,
    preview,
)
from maestrale.observability.events_service import EventService, ids_json
from maestrale.observability.fields import ALL_OPERATORS
from maestrale.observability.repository import EventRepository
from maestrale.observability.similar import similar_events

router = observability_router(prefix="/observability", tags=["observability"])


def _service(session: DbSession, tenant: CurrentTenant) -> EventService:
    return EventService(EventRepository(session, tenant))


@router.post("/chat-completion-events/search")
async def search_events(
    body: SearchEventsRequest,
    session: DbSession,
    tenant: CurrentTenant,
    page_size: Annotated[int, Query()] = 50,
    cursor: Annotated[str | None, Query()] = None,
) -> SearchEventsOut:
    return await _service(session, tenant).search(
        body.search_params, body.extra_fields, page_size, cursor
    )


@router.post("/chat-completion-events/search-ids")
async def search_event_ids(
    body: SearchEventsRequest, request: Request, tenant: CurrentTenant
) -> StreamingResponse:
    chunks = await ids_json(request.app.state.db, tenant, body.search_params)
    return StreamingResponse(chunks, media_type="application/json")


@router.get("/chat-completion-events/{event_id}")
async def get_event(event_id: str, session: DbSession, tenant: CurrentTenant) -> dict[str, Any]:
    return await _service(session, tenant).get(event_id)


@router.get("/chat-completion-events/{event_id}/similar-events")
async def get_similar_events(
    event_id: str,
    request: Request,
    session: DbSession,
    tenant: CurrentTenant,
    gateway: GatewayDep,
    caller: CallerDep,
) -> SearchEventsOut:
    """The events nearest to this one by the embedding of their conversation (embedded lazily
    with MAESTRALE_SIMILAR_EVENTS_MODEL), nearest first, from the caller's workspace only."""
    settings = request.app.state.settings
    rows = await similar_events(
        EventRepository(session, tenant),
        gateway,
        caller,
        event_id,
        model=settings.similar_events_model,
        embed_limit=settings.similar_events_embed_limit,
    )
    return SearchEventsOut(completion_events=FeedOut(results=[preview(r) for r in rows]))


@router.get("/chat-completion-fields")
async def list_fields(session: DbSession, tenant: CurrentTenant) -> dict[str, Any]:
    return await _service(session, tenant).fields()


@router.get("/chat-completion-fields/{field_name}/options")
async def field_options(
    field_name: str,
    session: DbSession,
    tenant: CurrentTenant,
    operator: Annotated[str, Query(description=f"one of {', '.join(ALL_OPERATORS)}")],
) -> dict[str, Any]:
    return await _service(session, tenant).options(field_name, operator)


@router.post("/chat-completion-fields/{field_name}/options-counts")
async def field_option_counts(
    field_name: str, body: FieldOptionCountsRequest, session: DbSession, tenant: CurrentTenant
) -> dict[str, Any]:
    return await _service(session, tenant).option_counts(field_name, body.filter_params)
