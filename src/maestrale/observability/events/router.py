"""Chat completion events and their searchable fields (beta observability)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, Query
from fastapi.responses import StreamingResponse

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.dependencies import Db
from maestrale.core.routing import Work
from maestrale.gateway.dependencies import CallerDep, PlatformCallsDep
from maestrale.observability.errors import observability_router
from maestrale.observability.events.repository import ChatCompletionEventRepository
from maestrale.observability.events.schemas import (
    FeedOut,
    FieldOptionCountsRequest,
    SearchEventsOut,
    SearchEventsRequest,
    preview,
)
from maestrale.observability.events.service import ChatCompletionEventService, ids_json
from maestrale.observability.fields import ALL_OPERATORS

if TYPE_CHECKING:
    from maestrale.observability.events.similar import SimilarEvents

router = observability_router(prefix="/observability", tags=["observability"])


def _events(work: Work, tenant: CurrentTenant, settings: AppSettings) -> ChatCompletionEventService:
    budget = settings.observability_search_timeout
    return ChatCompletionEventService(
        ChatCompletionEventRepository(work.session, tenant, budget=budget)
    )


def _similar(
    work: Work,
    tenant: CurrentTenant,
    calls: PlatformCallsDep,
    caller: CallerDep,
    settings: AppSettings,
) -> SimilarEvents:
    # Imported by the first similar-events request: numpy (~13 MB) is not paid by every process.
    from maestrale.observability.events.similar import SimilarEvents

    return SimilarEvents(
        work,
        tenant,
        calls,
        caller,
        model=settings.similar_events_model,
        embed_limit=settings.similar_events_embed_limit,
    )


Events = Annotated[ChatCompletionEventService, Depends(_events)]
Similar = Annotated["SimilarEvents", Depends(_similar)]


@router.post("/chat-completion-events/search")
async def search_events(
    body: SearchEventsRequest,
    events: Events,
    page_size: Annotated[int, Query()] = 50,
    cursor: Annotated[str | None, Query()] = None,
) -> SearchEventsOut:
    """Search the workspace's chat completion events with `search_params` (AND/OR groups of
    `{field, op, value}` conditions), newest first, a page at a time: pass the returned
    `cursor` back for the next page. `extra_fields` limits the extra fields returned."""
    return await events.search(body.search_params, body.extra_fields, page_size, cursor)


@router.post("/chat-completion-events/search-ids")
async def search_event_ids(
    body: SearchEventsRequest, tenant: CurrentTenant, db: Db, settings: AppSettings
) -> StreamingResponse:
    """The ids of every event matching `search_params`, newest first, in one streamed
    response (no pages)."""
    budget = settings.observability_search_timeout
    chunks = await ids_json(db, tenant, body.search_params, budget)
    return StreamingResponse(chunks, media_type="application/json")


@router.get("/chat-completion-events/{event_id}")
async def get_event(event_id: str, events: Events) -> dict[str, Any]:
    """One event in full: its request and response messages, tools, usage and extra fields."""
    return await events.get(event_id)


@router.get("/chat-completion-events/{event_id}/similar-events")
async def get_similar_events(event_id: str, similar: Similar) -> SearchEventsOut:
    """The events nearest to this one by the embedding of their conversation (embedded lazily
    with MAESTRALE_SIMILAR_EVENTS_MODEL), nearest first, from the caller's workspace only."""
    rows = await similar.nearest(event_id)
    return SearchEventsOut(completion_events=FeedOut(results=[preview(r) for r in rows]))


@router.get("/chat-completion-fields")
async def list_fields(events: Events) -> dict[str, Any]:
    """The searchable fields: the event's own fields and the `extra_fields.<key>` keys seen in
    the workspace's latest events, each with its type and supported operators, in groups."""
    return await events.fields()


@router.get("/chat-completion-fields/{field_name}/options")
async def field_options(
    field_name: str,
    events: Events,
    operator: Annotated[str, Query(description=f"one of {', '.join(ALL_OPERATORS)}")],
) -> dict[str, Any]:
    """The values a field takes in the workspace (for ENUM, BOOL and extra text fields), to
    offer with `operator`; `isnull` offers true and false."""
    return await events.options(field_name, operator)


@router.post("/chat-completion-fields/{field_name}/options-counts")
async def field_option_counts(
    field_name: str, body: FieldOptionCountsRequest, events: Events
) -> dict[str, Any]:
    """How many events take each value of a field, among the events matching
    `filter_params`, most frequent first."""
    return await events.option_counts(field_name, body.filter_params)
