"""Wire models of schedules (`WorkflowScheduleRequest`, `ScheduleDefinition`,
`PartialScheduleDefinition`, `ScheduleDefinitionOutput`, ...), bounded so that every value
accepted fits Temporal's (int32 calendar ranges, durations): what Temporal still refuses (a cron
expression it cannot parse, a range out of its field) is a 400 `WF_1201`.

Durations (`every`, `offset`, `jitter`) are read as ISO-8601 strings (`"PT1H"`, as the official
SDK sends its timedeltas) or seconds, and written as ISO-8601 strings.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from pydantic import (
    BaseModel,
    Field,
    PlainSerializer,
    StringConstraints,
    field_validator,
    model_validator,
)

INT32_MAX = 2**31 - 1
MAX_DURATION = timedelta(days=36500)
SCHEDULE_ID = r"^[a-zA-Z0-9_-]+$"
SPEC_FIELDS = (
    "calendars",
    "intervals",
    "cron_expressions",
    "skip",
    "start_at",
    "end_at",
    "jitter",
    "time_zone_name",
)

Cron = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f]+$")]
Text = Annotated[str, StringConstraints(max_length=1000, pattern=r"^[^\x00]*$")]
OptionalId = Annotated[str | None, Field(default=None, max_length=256)]

# The largest page of the schedules list.
MAX_PAGE = 100


def iso_duration(value: timedelta) -> str:
    """An ISO-8601 duration in days and time (`P2707DT15H`): never in years or months, which
    a duration of days does not have (pydantic writes 2707 days as `P7Y152D`, a form RFC 3339
    refuses and readers take for calendar years)."""
    days, rest = value.days, value.seconds
    hours, minutes, seconds = rest // 3600, rest // 60 % 60, rest % 60
    text = f"P{days}D" if days else "P"
    clock = "".join(f"{amount}{unit}" for amount, unit in ((hours, "H"), (minutes, "M")) if amount)
    if value.microseconds:
        clock += f"{seconds + value.microseconds / 1_000_000:g}S"
    elif seconds or not (days or clock):
        clock += f"{seconds}S"
    return text + ("T" + clock if clock else "")


# A duration read as ISO 8601 or seconds, written by `iso_duration`.
Duration = Annotated[timedelta, PlainSerializer(iso_duration, return_type=str, when_used="json")]


def _duration(value: timedelta | None, smallest: timedelta) -> timedelta | None:
    if value is not None and not smallest <= value <= MAX_DURATION:
        raise ValueError(f"must be between {smallest.total_seconds():g} s and 100 years")
    return value


class ScheduleRange(BaseModel):
    start: int = Field(ge=0, le=INT32_MAX)
    end: int = Field(default=0, ge=0, le=INT32_MAX)
    step: int = Field(default=0, ge=0, le=INT32_MAX)


Ranges = Annotated[list[ScheduleRange] | None, Field(default=None, max_length=100)]


class ScheduleCalendar(BaseModel):
    """Times matching a range of each field (a field left out: Temporal's default)."""

    second: Ranges
    minute: Ranges
    hour: Ranges
    day_of_month: Ranges
    month: Ranges
    year: Ranges
    day_of_week: Ranges
    comment: Text | None = None


class ScheduleInterval(BaseModel):
    every: Duration
    offset: Duration | None = None

    @field_validator("every")
    @classmethod
    def _every(cls, value: timedelta) -> timedelta | None:
        return _duration(value, timedelta(seconds=1))

    @field_validator("offset")
    @classmethod
    def _offset(cls, value: timedelta | None) -> timedelta | None:
        return _duration(value, timedelta(0))


class SchedulePolicy(BaseModel):
    catchup_window_seconds: int = Field(default=31536000, ge=0, le=10 * 31536000)
    # Temporal's ScheduleOverlapPolicy: 1 skip, 2 buffer one, 3 buffer all, 4 cancel other,
    # 5 terminate other, 6 allow all.
    overlap: int | None = Field(default=None, ge=1, le=6)
    pause_on_failure: bool = False


class ScheduleSpecIn(BaseModel):
    """When a schedule acts: the union of its calendars, intervals and cron expressions, minus
    `skip`, between `start_at` and `end_at`."""

    calendars: list[ScheduleCalendar] | None = Field(default=None, max_length=100)
    intervals: list[ScheduleInterval] | None = Field(default=None, max_length=100)
    cron_expressions: list[Cron] | None = Field(default=None, max_length=100)
    skip: list[ScheduleCalendar] | None = Field(default=None, max_length=100)
    start_at: datetime | None = None
    end_at: datetime | None = None
    jitter: Duration | None = None
    time_zone_name: str | None = Field(default=None, min_length=1, max_length=64)

    @field_validator("start_at", "end_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value

    @field_validator("jitter")
    @classmethod
    def _jitter(cls, value: timedelta | None) -> timedelta | None:
        return _duration(value, timedelta(0))

    @field_validator("time_zone_name")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ZoneInfo(value)
            except Exception as exc:  # ValueError, ZoneInfoNotFoundError, OSError
                raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    @model_validator(mode="after")
    def _window(self) -> ScheduleSpecIn:
        if self.start_at and self.end_at and self.end_at < self.start_at:
            raise ValueError("end_at is before start_at")
        return self


class ScheduleDefinitionIn(ScheduleSpecIn):
    """`PartialScheduleDefinition` (only the fields sent change a schedule), and the base of
    `ScheduleDefinition`."""

    input: Any = None
    policy: SchedulePolicy | None = None
    max_executions: int | None = Field(default=None, ge=1, le=10**9)


class ScheduleDefinition(ScheduleDefinitionIn):
    schedule_id: str | None = Field(default=None, min_length=1, max_length=128, pattern=SCHEDULE_ID)


class ScheduleRequest(BaseModel):
    """`WorkflowScheduleRequest`: a workflow (by name or id, or by registration) and when to
    start it. Unknown fields are ignored."""

    schedule: ScheduleDefinition
    workflow_identifier: OptionalId
    workflow_registration_id: OptionalId
    workflow_version_id: OptionalId
    workflow_task_queue: OptionalId
    deployment_name: OptionalId
    schedule_id: str | None = Field(default=None, min_length=1, max_length=128, pattern=SCHEDULE_ID)

    @model_validator(mode="after")
    def _target(self) -> ScheduleRequest:
        if not (
            self.workflow_identifier or self.workflow_registration_id or self.workflow_version_id
        ):
            raise ValueError("name a workflow_identifier or a workflow_registration_id")
        return self


class ScheduleUpdateRequest(BaseModel):
    schedule: ScheduleDefinitionIn


class SchedulePauseRequest(BaseModel):
    note: Text | None = None


class ScheduleTriggerRequest(BaseModel):
    overlap: int | None = Field(default=None, ge=1, le=6)


class ScheduleResponse(BaseModel):
    """`WorkflowScheduleResponse`."""

    schedule_id: str


class FutureExecution(BaseModel):
    scheduled_at: datetime


class RecentExecution(BaseModel):
    scheduled_at: datetime
    started_at: datetime
    execution_id: str


class ScheduleOut(ScheduleSpecIn):
    """`ScheduleDefinitionOutput`: the spec as it was written (Temporal rewrites cron
    expressions into calendars), the rest as Temporal reports it."""

    input: Any
    schedule_id: str
    workflow_name: str
    deployment_name: str | None
    paused: bool
    note: str | None
    policy: SchedulePolicy
    remaining_executions: int | None
    future_executions: list[FutureExecution]
    recent_executions: list[RecentExecution]


class ScheduleList(BaseModel):
    """`WorkflowScheduleListResponse`; `next_page_token` null on the last page."""

    schedules: list[ScheduleOut]
    next_page_token: str | None
