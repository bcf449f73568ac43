"""Wire models of runs: the list (`WorkflowExecutionListResponse`, whose items are
`WorkflowExecutionWithoutResultResponse`), and the filters it takes."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from maestrale.workflows.executions.schemas import Status
from maestrale.workflows.tables import Execution

# The SDK's `WorkflowExecutionStatus`: RETRYING_AFTER_ERROR is a valid filter that matches
# nothing (the platform no longer returns it, and Maestrale never did).
StatusFilter = Literal[
    "RUNNING",
    "COMPLETED",
    "FAILED",
    "CANCELED",
    "TERMINATED",
    "CONTINUED_AS_NEW",
    "TIMED_OUT",
    "RETRYING_AFTER_ERROR",
]
SortBy = Literal["start_time", "end_time"]


class RunOut(BaseModel):
    """An execution's latest run, without its result."""

    workflow_name: str
    execution_id: str
    root_execution_id: str
    status: Status | None
    start_time: datetime
    end_time: datetime | None
    workflow_id: str | None = None
    deployment_name: str | None = None
    parent_execution_id: str | None = None
    run_id: str | None = None
    user_id: str | None = None
    total_duration_ms: int | None = None

    @classmethod
    def of(cls, row: Execution) -> RunOut:
        duration = None
        if row.end_time is not None:
            duration = max(0, int((row.end_time - row.start_time).total_seconds() * 1000))
        return cls(
            workflow_name=row.workflow_name,
            execution_id=row.id,
            root_execution_id=row.root_execution_id,
            status=row.status,
            start_time=row.start_time,
            end_time=row.end_time,
            workflow_id=row.workflow_id,
            deployment_name=row.deployment_name,
            parent_execution_id=row.parent_execution_id,
            run_id=row.run_id,
            user_id=row.user_id,
            total_duration_ms=duration,
        )


class RunList(BaseModel):
    executions: list[RunOut]
    next_page_token: str | None = None


@dataclass(frozen=True, slots=True)
class RunFilters:
    """What a listing keeps (all of it): a page token is valid only for the filters it was
    handed out with."""

    workflow_identifier: str | None = None
    root_execution_id: str | None = None
    search: str | None = None
    statuses: tuple[str, ...] = ()
    deployment_name: str | None = None
    start_time_after: datetime | None = None
    start_time_before: datetime | None = None
    end_time_after: datetime | None = None
    end_time_before: datetime | None = None
    user_id: str | None = None
    workflow_tags: tuple[str, ...] = ()
    include_internal: bool = True

    def canonical(self) -> dict[str, Any]:
        return {
            key: value.isoformat() if isinstance(value, datetime) else value
            for key, value in asdict(self).items()
        }
