"""Wire models of evaluation runs, their records and scores, and statistics (mistralai 3.x
`EvaluationRunV2Response`, `EvaluationRunRecordV2Response`, `EvaluatorStatistics`, ...), and of
the start-a-run extension."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from maestrale.observability.evaluations.projects.schemas import EvaluatorOut, Tag

MAX_RUN_RECORDS = 10_000


class SpanSearch(BaseModel):
    """The spans a run evaluates: those the search expression matches (the language of span
    searches, e.g. `span_name LIKE 'chat%'`), newest first."""

    expression: str = Field(max_length=10_000)


class RunCreate(BaseModel):
    """Start a run of an evaluation over inputs: a dataset's records (their messages), or the
    spans a search matches (their GenAI messages) — exactly one of the two."""

    model_config = ConfigDict(populate_by_name=True)

    name: str = Field(min_length=1, max_length=500)
    description: str | None = Field(default=None, max_length=100_000)
    tags: list[Tag] = Field(default_factory=list, max_length=100)
    metadata: dict[str, Any] = Field(default_factory=dict, alias="metadata_")
    dataset_id: str | None = Field(default=None, min_length=1, max_length=200)
    span_search: SpanSearch | None = None
    max_records: int = Field(default=1000, ge=1, le=MAX_RUN_RECORDS)

    @model_validator(mode="after")
    def _one_source(self) -> RunCreate:
        if (self.dataset_id is None) == (self.span_search is None):
            raise ValueError("give exactly one of dataset_id and span_search")
        return self


class NumericStatistics(BaseModel):
    type: Literal["numeric"] = "numeric"
    values: None = None
    sample_count: int
    avg: float | None
    min: float | None
    max: float | None
    std: float | None
    count: int


class CategoricalStatistics(BaseModel):
    type: Literal["categorical"] = "categorical"
    frequencies: dict[str, int]
    mode: list[str]
    count: int
    values: None = None
    excluded_count: int
    confusion_matrix: None = None


class UnsupportedStatistics(BaseModel):
    type: Literal["unsupported"] = "unsupported"
    count: int


Statistics = NumericStatistics | CategoricalStatistics | UnsupportedStatistics


class Summary(BaseModel):
    id: str
    name: str
    slug: str


class RunOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    creator_id: str
    evaluation_id: str
    name: str
    description: str | None
    tags: list[str]
    metadata: dict[str, Any] = Field(alias="metadata_")
    num_generations: int = 1
    evaluators: list[EvaluatorOut]
    run_info: dict[str, Any] | None
    status: str
    dataset_id: str | None
    run_evaluators: list[EvaluatorOut]
    system: None = None
    statistics: dict[str, Statistics]
    goal_results: dict[str, Any] = Field(default_factory=dict)
    passed: bool | None = None
    run_scores: dict[str, Any] = Field(default_factory=dict)
    optimization: None = None


class RunWithRefsOut(RunOut):
    evaluation: Summary | None
    project: Summary | None


class RunPage(BaseModel):
    count: int
    results: list[RunOut]
    next: str | None
    previous: str | None


class RunRefsPage(BaseModel):
    count: int
    results: list[RunWithRefsOut]
    next: str | None
    previous: str | None


class ListRuns(BaseModel):
    runs: RunPage


class SearchAllRuns(BaseModel):
    runs: RunRefsPage


class ScoreOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None = None
    value: Any
    metadata: dict[str, Any] = Field(default_factory=dict, alias="metadata_")
    status: str
    rationale: str | None
    error: str | None


class GenerationOut(BaseModel):
    """The record's one generation: the judged conversation's last message as its output, and
    each evaluator's score (runs judge the inputs as they are, with no model generating)."""

    model_config = ConfigDict(populate_by_name=True)

    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None = None
    output: Any
    metadata: dict[str, Any] = Field(default_factory=dict, alias="metadata_")
    status: str
    error: str | None = None
    scores: dict[str, list[ScoreOut]]


class OutputRecordOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict, alias="metadata_")
    record_info: dict[str, Any] | None = None
    generations: list[GenerationOut]


class RecordOut(BaseModel):
    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    input: Any
    dataset_record_id: str | None
    output_record: OutputRecordOut | None


class RecordPage(BaseModel):
    count: int
    results: list[RecordOut]
    next: str | None
    previous: str | None


class ListRecords(BaseModel):
    records: RecordPage


class RunStatisticsOut(BaseModel):
    run_id: str
    statistics: dict[str, Statistics]
    goal_results: dict[str, Any] = Field(default_factory=dict)
    passed: bool | None = None
