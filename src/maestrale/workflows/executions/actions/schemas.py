"""Wire models of the actions on executions: terminate and reset bodies, batch cancel and
terminate, signals, queries and updates (the official SDK's `TerminateBody`-less terminate,
`ResetInvocationBody`, `BatchExecutionBody` / `BatchExecutionResponse`, `SignalInvocationBody` /
`SignalWorkflowResponse`, `QueryInvocationBody` / `QueryWorkflowResponse`,
`UpdateInvocationBody` / `UpdateWorkflowResponse`). Unknown body fields are ignored."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

INT64_MAX = 2**63 - 1
MAX_BATCH = 100


class TerminateRequest(BaseModel):
    """Optional: the SDK sends no body at all."""

    reason: str | None = Field(default=None, max_length=1000)


class ResetRequest(BaseModel):
    event_id: int = Field(
        ge=1,
        le=INT64_MAX,
        description="the id of the workflow task event (completed, failed, timed out or"
        " started) to reset to, as the execution's history numbers it",
    )
    reason: str | None = Field(default=None, max_length=1000)
    exclude_signals: bool = False
    exclude_updates: bool = False


class BatchRequest(BaseModel):
    execution_ids: list[str] = Field(max_length=MAX_BATCH)


class BatchResult(BaseModel):
    status: Literal["success", "failure"]
    error: str | None = None


class BatchOut(BaseModel):
    """Per execution id: whether the action was done, and why not."""

    results: dict[str, BatchResult]


class HandlerCall(BaseModel):
    """A signal, query or update: the handler's name and its one argument (any JSON; `null`
    when absent). An encoded input (`{"b64payload", ...}`) is handed on as that JSON."""

    name: str = Field(min_length=1, max_length=256)
    input: Any = None


class SignalOut(BaseModel):
    message: str = "Signal accepted"


class QueryOut(BaseModel):
    query_name: str
    result: Any


class UpdateOut(BaseModel):
    update_name: str
    result: Any
