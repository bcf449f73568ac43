"""Wire models of execution and deployment logs and of execution traces (3.x's
`ExecutionLogSearchResponse`, `DeploymentLogSearchResponse`, `ExecutionTraceInfoResponse` and
the trace events, OTel and summary responses, which extend the execution response)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from maestrale.workflows.executions.schemas import ExecutionOut

# What an attribute of a summary span or a trace event may hold (3.x's
# WorkflowExecutionTraceSummaryAttributesValues): a map becomes its JSON text.
AttributeValue = str | int | float | bool | list[Any] | None


class LogRecordOut(BaseModel):
    """`ExecutionLogRecord` / `DeploymentLogRecord`: attributes as text (non-strings as JSON)."""

    timestamp: datetime
    trace_id: str
    span_id: str
    severity_text: str
    body: str
    log_attributes: dict[str, str]


class LogSearchOut(BaseModel):
    """A page of logs; `next_cursor` (opaque, it carries the window and the order) reads the
    next one, null once the window is drained."""

    results: list[LogRecordOut]
    next_cursor: str | None = None


class TraceInfoOut(BaseModel):
    otel_trace_id: str | None = None
    has_trace_data: bool = False


class TraceEventOut(BaseModel):
    """`WorkflowExecutionTraceEvent`: an event the worker recorded on a span."""

    type: Literal["EVENT", "EVENT_PROGRESS"] = "EVENT"
    name: str
    id: str
    timestamp_unix_nano: int
    attributes: dict[str, AttributeValue]
    internal: bool = False


class ProgressTraceEventOut(TraceEventOut):
    """`WorkflowExecutionProgressTraceEvent`: a task's progress (running, then done or failed)."""

    type: Literal["EVENT", "EVENT_PROGRESS"] = "EVENT_PROGRESS"
    status: Literal["RUNNING", "COMPLETED", "FAILED"] = "RUNNING"
    start_time_unix_ms: int
    end_time_unix_ms: int | None = None
    error: str | None = None


class SummarySpanOut(BaseModel):
    """`WorkflowExecutionTraceSummarySpan`: a span, its events and its children by start."""

    span_id: str
    name: str
    start_time_unix_nano: int
    end_time_unix_nano: int | None
    attributes: dict[str, AttributeValue]
    events: list[TraceEventOut]
    children: list[SummarySpanOut] = Field(default_factory=list)


class TraceEventsOut(ExecutionOut):
    events: list[ProgressTraceEventOut | TraceEventOut] = Field(default_factory=list)


class TraceSummaryOut(ExecutionOut):
    span_tree: SummarySpanOut | None = None


class TraceOtelOut(ExecutionOut):
    """`otel_trace_data` is the trace as OTLP JSON in Tempo's envelope: `{"batches": [...]}`,
    each batch an OTLP `ResourceSpans` (hex ids, 64-bit integers as strings)."""

    data_source: str
    otel_trace_id: str | None = None
    otel_trace_data: dict[str, Any] | None = None
