"""Wire models of runs: the list (`WorkflowExecutionListResponse`, whose items are
`WorkflowExecutionWithoutResultResponse`), and the filters it takes."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from maestrale.workflows.executions.schemas import ExecutionSummary

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


class RunList(BaseModel):
    executions: list[ExecutionSummary]
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
