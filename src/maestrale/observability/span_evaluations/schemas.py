"""Wire models of span evaluations and pipeline results (the SDK's SpanEvaluationsRequest,
GetSpanEvaluation(s), PipelineResultsRequest, PipelineResult, GetPipelineResults)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

MAX_EXPRESSION = 10_000
MAX_CONFIG_SLUGS = 100


class SpanEvaluationsRequest(BaseModel):
    search_expression: str | None = Field(default=None, max_length=MAX_EXPRESSION)


class SpanEvaluationOut(BaseModel):
    customer_id: str
    organization_id: str
    workspace_id: str
    user_id: str
    service_account_id: str
    trace_id: str
    span_id: str
    response_id: str
    conversation_id: str
    timestamp: datetime
    evaluation_name: str
    score_value: float
    score_label: str
    explanation: str
    metadata: dict[str, str]


class SpanEvaluationFeed(BaseModel):
    results: list[SpanEvaluationOut]
    next: str | None = None
    cursor: str | None = None


class SpanEvaluationsOut(BaseModel):
    span_evaluations: SpanEvaluationFeed


class PipelineResultsRequest(BaseModel):
    """`pipeline_config_slugs` names the configs whose verdicts to show (all of the workspace's
    when empty); `search_expression` keeps the spans (the spans' fields) it matches."""

    pipeline_config_slugs: list[Annotated[str, Field(max_length=200)]] = Field(
        max_length=MAX_CONFIG_SLUGS
    )
    search_expression: str | None = Field(default=None, max_length=MAX_EXPRESSION)


class PipelineResultOut(BaseModel):
    trace_id: str
    span_id: str
    span_name: str
    duration_ns: int
    evaluated_at: datetime
    judge_scores: dict[str, float]
    judge_labels: dict[str, str]
    judge_explanations: dict[str, str]


class PipelineResultFeed(BaseModel):
    results: list[PipelineResultOut]
    next: str | None = None
    cursor: str | None = None


class PipelineResultsOut(BaseModel):
    pipeline_results: PipelineResultFeed
