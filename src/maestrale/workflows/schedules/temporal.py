"""Schedules as Temporal's: the spec, policy and action a schedule maps onto, the description
Temporal gives back as the platform's `ScheduleDefinitionOutput`, and Temporal's errors as the
group's (`WF_1200` not found, `WF_1201` invalid)."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from temporalio.client import (
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleCalendarSpec,
    ScheduleDescription,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    ScheduleRange,
    ScheduleSpec,
)
from temporalio.client import SchedulePolicy as TemporalPolicy
from temporalio.common import RawValue
from temporalio.service import RPCError, RPCStatusCode

from maestrale.workflows.errors import (
    SCHEDULE_INVALID,
    SCHEDULE_NOT_FOUND,
    WorkflowError,
    engine_failed,
)
from maestrale.workflows.schedules.schemas import (
    FutureExecution,
    RecentExecution,
    ScheduleCalendar,
    ScheduleOut,
    SchedulePolicy,
    ScheduleSpecIn,
)
from maestrale.workflows.temporal.payloads import decode, start_payload

log = logging.getLogger("maestrale.workflows.schedules")

_CALENDAR_FIELDS = ("second", "minute", "hour", "day_of_month", "month", "year", "day_of_week")
# What the platform shows of a schedule's past and future.
SHOWN = 10


def not_found(schedule_id: str) -> WorkflowError:
    return WorkflowError(f"schedule {schedule_id!r} not found", SCHEDULE_NOT_FOUND, status_code=404)


def translated(exc: Exception, schedule_id: str) -> WorkflowError:
    """A Temporal error of a schedule call as the group's."""
    if isinstance(exc, WorkflowError):
        return exc
    if isinstance(exc, ScheduleAlreadyRunningError):
        return WorkflowError(
            f"schedule id {schedule_id!r} is taken", SCHEDULE_INVALID, status_code=409
        )
    if isinstance(exc, RPCError):
        if exc.status == RPCStatusCode.NOT_FOUND:
            return not_found(schedule_id)
        if exc.status == RPCStatusCode.INVALID_ARGUMENT:
            return WorkflowError(exc.message, SCHEDULE_INVALID, status_code=400)
        if exc.status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED):
            return engine_failed("the workflow engine (Temporal) is unreachable", status_code=503)
        return engine_failed(f"the workflow engine refused the call: {exc.message}")
    if isinstance(exc, ValueError | OverflowError):  # a value the protobuf cannot hold
        return WorkflowError(f"invalid schedule: {exc}", SCHEDULE_INVALID, status_code=400)
    log.warning("Temporal schedule call failed for %s: %r", schedule_id, exc)
    return engine_failed(f"the workflow engine failed: {type(exc).__name__}")


def _calendar(calendar: ScheduleCalendar) -> ScheduleCalendarSpec:
    given: dict[str, Any] = {
        name: [ScheduleRange(r.start, r.end, r.step) for r in ranges]
        for name in _CALENDAR_FIELDS
        if (ranges := getattr(calendar, name)) is not None
    }
    return ScheduleCalendarSpec(**given, comment=calendar.comment)


def spec_of(spec: ScheduleSpecIn) -> ScheduleSpec:
    return ScheduleSpec(
        calendars=[_calendar(c) for c in spec.calendars or ()],
        intervals=[
            ScheduleIntervalSpec(every=i.every, offset=i.offset) for i in spec.intervals or ()
        ],
        cron_expressions=list(spec.cron_expressions or ()),
        skip=[_calendar(c) for c in spec.skip or ()],
        start_at=spec.start_at,
        end_at=spec.end_at,
        jitter=spec.jitter,
        time_zone_name=spec.time_zone_name,
    )


def policy_of(policy: SchedulePolicy | None) -> TemporalPolicy:
    policy = policy or SchedulePolicy()
    return TemporalPolicy(
        overlap=ScheduleOverlapPolicy(policy.overlap or ScheduleOverlapPolicy.SKIP),
        catchup_window=timedelta(seconds=policy.catchup_window_seconds),
        pause_on_failure=policy.pause_on_failure,
    )


def action_of(
    workflow_name: str,
    input_: Any,
    *,
    schedule_id: str,
    task_queue: str,
    namespace: str,
    execution_timeout: timedelta | None,
) -> ScheduleActionStartWorkflow:
    """Start `workflow_name` with the platform's start payload, as an execute would: the
    worker finds its context there. Temporal names each run `<schedule_id>-<time>`, and the
    worker's `executions/register` indexes it."""
    payload = start_payload(
        input_,
        namespace=namespace,
        execution_id=schedule_id,
        token=str(uuid.uuid4()),
        extensions=None,
    )
    return ScheduleActionStartWorkflow(
        workflow_name,
        RawValue(payload),
        id=schedule_id,
        task_queue=task_queue,
        execution_timeout=execution_timeout,
    )


def action_input(action: Any) -> Any:
    args = list(getattr(action, "args", None) or [])
    return decode(args[0]) if args else None


def output_of(described: ScheduleDescription, spec: ScheduleSpecIn) -> ScheduleOut:
    schedule = described.schedule
    action: Any = schedule.action
    state, info = schedule.state, described.info
    catchup = schedule.policy.catchup_window
    recent = [
        RecentExecution(
            scheduled_at=result.scheduled_at,
            started_at=result.started_at,
            execution_id=result.action.workflow_id,
        )
        for result in info.recent_actions
        if hasattr(result.action, "workflow_id")
    ]
    return ScheduleOut(
        **spec.model_dump(),
        input=action_input(action),
        schedule_id=described.id,
        workflow_name=str(getattr(action, "workflow", "")),
        deployment_name=getattr(action, "task_queue", None),
        paused=state.paused,
        note=state.note,
        policy=SchedulePolicy(
            catchup_window_seconds=int(catchup.total_seconds()) if catchup else 31536000,
            overlap=int(schedule.policy.overlap) or None,
            pause_on_failure=schedule.policy.pause_on_failure,
        ),
        remaining_executions=state.remaining_actions if state.limited_actions else None,
        future_executions=[FutureExecution(scheduled_at=t) for t in info.next_action_times][:SHOWN],
        recent_executions=recent[-SHOWN:],
    )
