"""Wire models of traces, spans and logs (the SDK's GetTrace, GetSpan, GetLog, their feeds) and
of aggregations (AggregationRequest, Aggregation)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, PlainSerializer

# RFC 3339 in UTC, always with microseconds (a span's nanoseconds, truncated).
Timestamp = Annotated[
    datetime,
    PlainSerializer(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), return_type=str),
]
Aggregation = Literal[
    "count", "count_distinct", "sum", "avg", "min", "max", "p50", "p90", "p95", "p99"
]
Granularity = Literal["auto", "second", "minute", "hour", "day", "week", "month"]
Direction = Literal["asc", "desc"]
MAX_EXPRESSION = 10_000


class TracesRequest(BaseModel):
    search_expression: str | None = Field(default=None, max_length=MAX_EXPRESSION)


class SpansRequest(BaseModel):
    search_expression: str | None = Field(default=None, max_length=MAX_EXPRESSION)


class LogsRequest(BaseModel):
    search_expression: str | None = Field(default=None, max_length=MAX_EXPRESSION)
    order: Direction = "desc"


class MetricDefinition(BaseModel):
    measure: str = Field(max_length=1024)
    aggregation: Aggregation


class TimeDimension(BaseModel):
    granularity: Granularity | None = None


class OrderByClause(BaseModel):
    field: str = Field(max_length=1024)
    direction: Direction = "asc"


class AggregationRequest(BaseModel):
    metric: MetricDefinition
    dimensions: list[Annotated[str, Field(max_length=1024)]] = Field(
        default_factory=list, max_length=10
    )
    time_dimension: TimeDimension | None = None
    search_expression: str | None = Field(default=None, max_length=MAX_EXPRESSION)
    order_by: list[OrderByClause] | None = Field(default=None, max_length=12)
    limit: int = Field(default=1000, ge=1, le=10_000)


class AggregationRow(BaseModel):
    metric_name: str
    time_bucket: Timestamp | None = None
    dimensions: dict[str, Any] = Field(default_factory=dict)
    metric_value: float | int | None = None


class AggregationMeta(BaseModel):
    from_timestamp: Timestamp
    to_timestamp: Timestamp
    granularity_seconds: int | None = None


class AggregationOut(BaseModel):
    data: list[AggregationRow]
    meta: AggregationMeta


class _Owned(BaseModel):
    customer_id: str
    organization_id: str
    workspace_id: str
    user_id: str
    service_account_id: str = ""


class TraceOut(_Owned):
    trace_id: str
    root_span_id: str
    root_span_name: str
    start_time: Timestamp
    end_time: Timestamp
    duration_ns: int
    service_name: str
    environment: str
    conversation_id: str
    workflow_name: str
    agent_id: str
    agent_name: str
    status_code: str
    error_count: int
    span_count: int
    gen_ai_span_count: int
    llm_call_count: int
    tool_call_count: int
    retrieval_count: int
    evaluation_count: int
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    models_used: list[str]
    tools_used: list[str]
    first_turn_last_input_message: str
    first_turn_last_output_message: str
    last_turn_last_input_message: str
    last_turn_last_output_message: str


class SpanOut(_Owned):
    trace_id: str
    span_id: str
    parent_span_id: str
    trace_state: str
    start_time: Timestamp
    end_time: Timestamp
    duration_ns: int
    span_name: str
    span_kind: str
    service_name: str
    status_code: str
    status_message: str
    error_type: str
    operation_name: str
    provider_name: str
    request_model: str
    response_model: str
    response_id: str
    output_type: str
    conversation_id: str
    data_source_id: str
    agent_id: str
    agent_name: str
    agent_version: str
    agent_description: str
    workflow_name: str
    prompt_name: str
    tool_name: str
    tool_type: str
    tool_call_id: str
    input_messages: str
    output_messages: str
    system_instructions: str
    tool_definitions: str
    tool_call_arguments: str
    tool_call_result: str
    request_choice_count: int
    request_max_tokens: int
    request_temperature: float | None
    request_top_p: float | None
    request_top_k: float | None
    request_presence_penalty: float | None
    request_frequency_penalty: float | None
    request_seed: int
    request_stop_sequences: list[str]
    request_encoding_formats: list[str]
    response_finish_reasons: list[str]
    usage_input_tokens: int
    usage_output_tokens: int
    usage_cache_read_input_tokens: int
    usage_cache_creation_input_tokens: int
    resource_attributes: dict[str, str]
    span_attributes: dict[str, str]
    scope_name: str
    scope_version: str


class LogOut(_Owned):
    timestamp: Timestamp
    trace_id: str
    span_id: str
    trace_flags: int
    severity_text: str
    severity_number: int
    service_name: str
    body: str
    event_name: str
    resource_schema_url: str
    resource_attributes: dict[str, str]
    scope_schema_url: str
    scope_name: str
    scope_version: str
    scope_attributes: dict[str, str]
    log_attributes: dict[str, str]


class _Feed(BaseModel):
    # `cursor`: the opaque cursor of the next page (null on the last page); `next`: the URL
    # (path and query) of the next page, to POST the same body to (null on the last page).
    next: str | None = None
    cursor: str | None = None


class TraceFeed(_Feed):
    results: list[TraceOut] = Field(default_factory=list)


class SpanFeed(_Feed):
    results: list[SpanOut] = Field(default_factory=list)


class LogFeed(_Feed):
    results: list[LogOut] = Field(default_factory=list)


class GetTracesOut(BaseModel):
    traces: TraceFeed


class GetSpansOut(BaseModel):
    spans: SpanFeed


class GetLogsOut(BaseModel):
    logs: LogFeed
