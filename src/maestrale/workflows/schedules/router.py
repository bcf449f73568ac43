"""Schedules of workflows, on Temporal schedules."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Path, Query, Response

from maestrale.workflows.dependencies import Schedules
from maestrale.workflows.routing import workflows_router
from maestrale.workflows.schedules.schemas import (
    MAX_PAGE,
    ScheduleList,
    ScheduleOut,
    SchedulePauseRequest,
    ScheduleRequest,
    ScheduleResponse,
    ScheduleTriggerRequest,
    ScheduleUpdateRequest,
)

router = workflows_router(prefix="/workflows/schedules", tags=["workflows schedules"])

ScheduleId = Annotated[str, Path(max_length=200)]


@router.post("", response_model=ScheduleResponse, status_code=201)
async def schedule_workflow(body: ScheduleRequest, service: Schedules) -> ScheduleResponse:
    """Schedule a workflow (by name or id, or by registration) on its deployment: calendars,
    intervals and cron expressions, a time window, a time zone, jitter, an overlap policy and
    at most `max_executions` runs. Each run is an execution `<schedule_id>-<time>`. An invalid
    spec (a cron expression Temporal cannot read) is a 400 `WF_1201`; a taken id a 409."""
    return ScheduleResponse(schedule_id=await service.create(body))


@router.get("", response_model=ScheduleList)
async def get_schedules(
    service: Schedules,
    workflow_name: Annotated[str | None, Query(max_length=128)] = None,
    user_id: Annotated[str | None, Query(max_length=64)] = None,
    status: Literal["active", "paused"] | None = None,
    search: Annotated[str | None, Query(max_length=128)] = None,
    page_size: Annotated[int | None, Query(ge=1, le=MAX_PAGE)] = None,
    next_page_token: Annotated[str | None, Query(max_length=400)] = None,
) -> ScheduleList:
    """The workspace's schedules, as Temporal describes them; filtered by workflow, by creator
    (`current`: the caller), by state and by a prefix of the workflow's name (`search`). Pages
    of `page_size` (100 when not given)."""
    return await service.list(
        workflow_name=workflow_name,
        user_id=user_id,
        status=status,
        page_size=page_size,
        token=next_page_token,
        search=search,
    )


@router.get("/{schedule_id}", response_model=ScheduleOut)
async def get_schedule(schedule_id: ScheduleId, service: Schedules) -> ScheduleOut:
    """A schedule: its spec, input, policy, state, and its next and last runs."""
    return await service.get(schedule_id)


@router.patch("/{schedule_id}", response_model=ScheduleResponse)
async def update_schedule(
    schedule_id: ScheduleId, body: ScheduleUpdateRequest, service: Schedules
) -> ScheduleResponse:
    """Change the fields of the schedule that the body sets (the spec fields, `input`,
    `policy`, `max_executions`); the others keep their values."""
    return ScheduleResponse(schedule_id=await service.update(schedule_id, body.schedule))


@router.post("/{schedule_id}/pause", status_code=204)
async def pause_schedule(
    schedule_id: ScheduleId, service: Schedules, body: SchedulePauseRequest | None = None
) -> Response:
    """Stop starting runs until resumed, with an optional note."""
    await service.pause(schedule_id, body.note if body else None)
    return Response(status_code=204)


@router.post("/{schedule_id}/resume", status_code=204)
async def resume_schedule(
    schedule_id: ScheduleId, service: Schedules, body: SchedulePauseRequest | None = None
) -> Response:
    """Start runs again, with an optional note."""
    await service.resume(schedule_id, body.note if body else None)
    return Response(status_code=204)


@router.post("/{schedule_id}/trigger", status_code=204)
async def trigger_schedule(
    schedule_id: ScheduleId, service: Schedules, body: ScheduleTriggerRequest | None = None
) -> Response:
    """Start a run now, paused or not, under the schedule's overlap policy or `overlap`."""
    await service.trigger(schedule_id, body.overlap if body else None)
    return Response(status_code=204)


@router.delete("/{schedule_id}", status_code=204)
async def unschedule_workflow(schedule_id: ScheduleId, service: Schedules) -> Response:
    """Delete the schedule; runs it started go on."""
    await service.delete(schedule_id)
    return Response(status_code=204)
