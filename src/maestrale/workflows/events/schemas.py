"""Wire models of workflow events: what the official worker posts (its `protocol.v1.events`
models), the list answer (`ListWorkflowEventResponse`) and the payload of each streamed event
(`StreamEventSsePayload`).

Only the envelope is checked: the attributes are the worker's (their shape follows the event
type and the SDK version), kept as sent so that clients read back exactly what the worker said.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from maestrale.core.validation import INT64_MAX

EventType = Literal[
    "WORKFLOW_EXECUTION_STARTED",
    "WORKFLOW_EXECUTION_COMPLETED",
    "WORKFLOW_EXECUTION_FAILED",
    "WORKFLOW_EXECUTION_CANCELED",
    "WORKFLOW_EXECUTION_CONTINUED_AS_NEW",
    "WORKFLOW_TASK_TIMED_OUT",
    "WORKFLOW_TASK_FAILED",
    "CUSTOM_TASK_STARTED",
    "CUSTOM_TASK_IN_PROGRESS",
    "CUSTOM_TASK_COMPLETED",
    "CUSTOM_TASK_FAILED",
    "CUSTOM_TASK_TIMED_OUT",
    "CUSTOM_TASK_CANCELED",
    "ACTIVITY_TASK_STARTED",
    "ACTIVITY_TASK_COMPLETED",
    "ACTIVITY_TASK_RETRYING",
    "ACTIVITY_TASK_FAILED",
]

# The events that close a run, and the status each gives the execution index.
CLOSING = {
    "WORKFLOW_EXECUTION_COMPLETED": "COMPLETED",
    "WORKFLOW_EXECUTION_FAILED": "FAILED",
    "WORKFLOW_EXECUTION_CANCELED": "CANCELED",
    "WORKFLOW_EXECUTION_CONTINUED_AS_NEW": "CONTINUED_AS_NEW",
}
# Of those, the ones after which an execution emits nothing more (continue-as-new goes on).
FINAL = frozenset(CLOSING) - {"WORKFLOW_EXECUTION_CONTINUED_AS_NEW"}

MAX_BATCH = 1000


class EventIn(BaseModel):
    """One event as the worker sends it (`BaseEvent` and its subclasses); unknown keys are kept."""

    model_config = ConfigDict(extra="allow")

    event_id: str = Field(min_length=1, max_length=200)
    event_type: EventType
    event_timestamp: int = Field(ge=0, le=INT64_MAX)
    workflow_exec_id: str = Field(min_length=1, max_length=256)
    workflow_run_id: str = Field(min_length=1, max_length=64)
    workflow_name: str = Field(min_length=1, max_length=128)
    root_workflow_exec_id: str = Field(min_length=1, max_length=256)
    parent_workflow_exec_id: str | None = Field(default=None, max_length=256)
    continued_run_id: str | None = Field(default=None, max_length=256)
    first_execution_run_id: str | None = Field(default=None, max_length=256)
    chain_run_id: str | None = Field(default=None, max_length=256)
    schedule_id: str | None = Field(default=None, max_length=256)
    attributes: dict[str, Any]


class EventRequest(BaseModel):
    """`WorkflowEventRequest`."""

    event: EventIn


class EventBatchRequest(BaseModel):
    """`WorkflowEventBatchRequest`: at most 1000 events."""

    events: list[EventIn] = Field(max_length=MAX_BATCH)


class EventResponse(BaseModel):
    """`WorkflowEventResponse`."""

    status: Literal["success", "error"] = "success"
    message: str | None = None


class EventBatchResponse(EventResponse):
    """`WorkflowEventBatchResponse`: how many events were received (duplicates included: a
    retried batch is received again, and stored once)."""

    events_received: int


class EventList(BaseModel):
    """`ListWorkflowEventResponse`: events in arrival order; `next_cursor` null on the last
    page."""

    events: list[dict[str, Any]]
    next_cursor: str | None


class StreamContext(BaseModel):
    """`StreamEventWorkflowContext`."""

    namespace: str
    workflow_name: str
    workflow_exec_id: str
    parent_workflow_exec_id: str | None = None
    root_workflow_exec_id: str | None = None


class StreamPayload(BaseModel):
    """`StreamEventSsePayload`, the `data:` of each streamed event; `broker_sequence` is the
    event's position (its SSE `id:`), from which a client resumes (`start_seq` = it + 1, or
    `last_event_id` = it)."""

    stream: str
    data: dict[str, Any]
    workflow_context: StreamContext
    broker_sequence: int
    timestamp: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class StreamError(BaseModel):
    """`WorkflowStreamError`: the stream failed after its 200 (sent as `event: error`)."""

    error: str
    reason: str
