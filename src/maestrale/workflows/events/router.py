"""Workflow events: reported by workers (v1 events API), listed and streamed to clients."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Depends, Header, Query, Request
from fastapi.responses import StreamingResponse

from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.core.dependencies import Db
from maestrale.core.routing import Work
from maestrale.core.sse import SSE_EVENT, sse_response
from maestrale.core.validation import INT64_MAX
from maestrale.workflows.dependencies import workspace_engine
from maestrale.workflows.errors import WorkflowErrorOut, not_found
from maestrale.workflows.events.repository import EventFilter
from maestrale.workflows.events.schemas import (
    EventBatchRequest,
    EventBatchResponse,
    EventList,
    EventRequest,
    EventResponse,
    EventType,
)
from maestrale.workflows.events.service import MAX_LIMIT, WorkflowEventService, position
from maestrale.workflows.events.streaming import STREAM_NAME, EventStream, StreamSpec
from maestrale.workflows.routing import workflows_router

router = workflows_router(prefix="/workflows", tags=["workflows events"])

_SSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events: `id: <seq>` and `data: <StreamEventSsePayload>`",
        "content": {"text/event-stream": {"schema": SSE_EVENT}},
    }
}
_FOREIGN: dict[int | str, dict[str, Any]] = {
    403: {"model": WorkflowErrorOut, "description": "An execution of another workspace"}
}
Id = Annotated[str | None, Query(max_length=256)]
Glob = Annotated[str, Query(max_length=256)]


async def event_service(work: Work, principal: StandardAuth) -> WorkflowEventService:
    return WorkflowEventService(work, Tenant.of(principal))


Events = Annotated[WorkflowEventService, Depends(event_service)]


@router.post("/events", response_model=EventResponse, responses=_FOREIGN)
async def receive_workflow_event(body: EventRequest, service: Events) -> EventResponse:
    """One event from a worker. Idempotent: an event_id already received is ignored. An event
    of another workspace's execution is refused (403)."""
    await service.ingest([body.event])
    return EventResponse()


@router.post("/events/batch", response_model=EventBatchResponse, responses=_FOREIGN)
async def receive_workflow_events_batch(
    body: EventBatchRequest, service: Events
) -> EventBatchResponse:
    """Up to 1000 events from a worker, stored at once (duplicates ignored)."""
    received = await service.ingest(body.events)
    return EventBatchResponse(events_received=received)


@router.get("/events/list", response_model=EventList)
async def get_workflow_events(
    service: Events,
    root_workflow_exec_id: Id = None,
    workflow_exec_id: Id = None,
    workflow_run_id: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 100,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> EventList:
    """The workspace's events in arrival order, filtered by execution, root execution or run;
    `next_cursor` (opaque) reads the next page."""
    return await service.page(
        cursor=cursor,
        limit=limit,
        execution_id=workflow_exec_id,
        root_execution_id=root_workflow_exec_id,
        run_id=workflow_run_id,
    )


def _given(value: str) -> str | None:
    return None if value == "*" else value


@router.get("/events/stream", response_class=StreamingResponse, responses=_SSE)
async def get_stream_events(
    request: Request,
    principal: StandardAuth,
    db: Db,
    scope: Literal["activity", "workflow", "*"] = "*",
    activity_name: Glob = "*",
    activity_id: Glob = "*",
    workflow_name: Glob = "*",
    workflow_exec_id: Glob = "*",
    root_workflow_exec_id: Glob = "*",
    parent_workflow_exec_id: Glob = "*",
    stream: Glob = "*",
    start_seq: Annotated[int, Query(ge=0, le=INT64_MAX)] = 0,
    workflow_event_types: Annotated[list[EventType] | None, Query(max_length=20)] = None,
    last_event_id: Annotated[str | None, Header(alias="last-event-id", max_length=20)] = None,
) -> StreamingResponse:
    """The workspace's events as they arrive (`*` matches anything), from `start_seq` or after
    the `Last-Event-ID` header. Scoped to an execution (or a root execution), the stream ends
    once it has ended and its events were sent; otherwise it runs up to 30 minutes."""
    after = max(start_seq - 1, 0)
    if last_event_id:
        after = max(after, position(last_event_id, "Last-Event-ID"))
    parent, act_name, act_id = (
        _given(parent_workflow_exec_id),
        _given(activity_name),
        _given(activity_id),
    )

    def keep(body: dict[str, Any]) -> bool:
        kind = str(body.get("event_type", ""))
        attributes = body.get("attributes")
        attributes = attributes if isinstance(attributes, dict) else {}
        return (
            _given(stream) in (None, STREAM_NAME)
            and (scope == "*" or (scope == "activity") == kind.startswith("ACTIVITY_TASK_"))
            and (parent is None or body.get("parent_workflow_exec_id") == parent)
            and (act_name is None or attributes.get("activity_name") == act_name)
            and (act_id is None or attributes.get("task_id") == act_id)
        )

    tenant = Tenant.of(principal)
    engine = workspace_engine(request, tenant)
    spec = StreamSpec(
        tenant=tenant,
        namespace=engine.namespace,
        wanted=EventFilter(
            execution_id=_given(workflow_exec_id),
            root_execution_id=_given(root_workflow_exec_id),
            workflow_name=_given(workflow_name),
            event_types=tuple(workflow_event_types or ()),
        ),
        after=after,
        watch=_given(workflow_exec_id) or _given(root_workflow_exec_id),
        keep=keep,
    )
    stream_ = EventStream(spec, db.sessionmaker, engine)
    return sse_response(stream_.frames())


@router.get("/executions/{execution_id}/stream", response_class=StreamingResponse, responses=_SSE)
async def stream_workflow_execution(
    execution_id: str,
    request: Request,
    service: Events,
    db: Db,
    event_source: Literal["DATABASE", "LIVE", "HYBRID"] | None = None,
    last_event_id: Annotated[str | None, Query(max_length=20)] = None,
) -> StreamingResponse:
    """The events of an execution and of the executions below it: those stored then those to
    come (`HYBRID`, the default), only those to come (`LIVE`), or only those stored
    (`DATABASE`); after `last_event_id` when given. Ends once the execution has ended and its
    events were sent."""
    engine = workspace_engine(request, service.tenant)
    events = service.events
    if await events.execution(execution_id) is None:
        raise not_found(f"execution {execution_id!r}")
    if last_event_id is not None:
        after = position(last_event_id, "last_event_id")
    elif event_source == "LIVE":
        after = await events.last_seq()
    else:
        after = 0
    spec = StreamSpec(
        tenant=service.tenant,
        namespace=engine.namespace,
        wanted=EventFilter(lineage=execution_id),
        after=after,
        follow=event_source != "DATABASE",
        watch=execution_id,
    )
    # The route commits the request's reads before the stream starts, which then reads in
    # short transactions of its own.
    return sse_response(EventStream(spec, db.sessionmaker, engine).frames())
