"""Wire models of executions: the execute request and the execution response."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Self

from pydantic import BaseModel, Field

from maestrale.workflows.executions.tables import Execution

EXECUTION_ID = r"^[a-zA-Z0-9_-]+$"

Status = Literal[
    "RUNNING", "COMPLETED", "FAILED", "CANCELED", "TERMINATED", "CONTINUED_AS_NEW", "TIMED_OUT"
]


class ExecutionRequest(BaseModel):
    """`WorkflowExecutionRequest`; unknown fields are accepted and ignored. `force_new_trace`
    and `traceparent` (3.x) are accepted: no trace context is handed to the worker here (the
    start payload carries none), so neither changes the execution."""

    execution_id: str | None = Field(
        default=None, min_length=1, max_length=256, pattern=EXECUTION_ID
    )
    input: Any = None
    wait_for_result: bool = False
    timeout_seconds: float | None = Field(default=None, gt=0, le=86400)
    custom_tracing_attributes: dict[str, str] | None = None
    extensions: dict[str, Any] | None = None
    task_queue: str | None = Field(default=None, min_length=1, max_length=200)
    deployment_name: str | None = Field(default=None, min_length=1, max_length=200)
    force_new_trace: bool = False
    traceparent: str | None = Field(default=None, max_length=512)


class ExecutionSummary(BaseModel):
    """`WorkflowExecutionWithoutResultResponse`: an execution's latest run, without its result
    (the items of the runs list)."""

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
    def of(cls, row: Execution) -> Self:
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


class ExecutionOut(ExecutionSummary):
    """`WorkflowExecutionResponse`: the run, with its result once it completed, and its search
    keys when asked for (`include_search_keys`, 3.x)."""

    result: Any = None
    search_keys: dict[str, str | None] | None = None

    @classmethod
    def of(cls, row: Execution) -> Self:
        out = super().of(row)
        out.result = row.result
        return out
