"""Wire models of optimizations (mistralai 3.x `Optimization`, `OptimizationDetail`,
`OptimizationTrialWithObservations`) and of their create extensions."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from maestrale.observability.evaluations.projects.schemas import Tag
from maestrale.observability.evaluations.runs.schemas import RunOut


class Objective(BaseModel):
    """What a trial's observation is: an evaluator's numeric statistic over its run."""

    evaluator: str = Field(min_length=1, max_length=500)
    metric: Literal["avg", "min", "max"] = "avg"
    direction: Literal["maximize", "minimize"] = "maximize"


class OptimizationCreate(BaseModel):
    name: str = Field(min_length=1, max_length=500)
    evaluation: str = Field(min_length=1, max_length=200, description="the evaluation's slug")
    algorithm: str = Field(default="manual", min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=100_000)
    steer: str | None = Field(default=None, max_length=100_000)
    tags: list[Tag] = Field(default_factory=list, max_length=100)
    objective_spec: Objective


class TrialCreate(BaseModel):
    """A trial (extension): a run of the optimization's evaluation, with what it tries."""

    model_config = ConfigDict(populate_by_name=True)

    run_id: str = Field(min_length=1, max_length=200)
    algorithm_trial_key: str | None = Field(default=None, min_length=1, max_length=200)
    hypothesis: str | None = Field(default=None, max_length=100_000)
    parent_trial_id: str | None = Field(default=None, max_length=200)
    metadata: dict[str, Any] = Field(default_factory=dict, alias="metadata_")


class Reference(BaseModel):
    id: str
    slug: str
    name: str


class OptimizationOut(BaseModel):
    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    creator_id: str
    project_id: str
    name: str
    algorithm: str
    status: str
    source: str = "api"
    evaluation_id: str | None
    description: str | None
    steer: str | None
    tags: list[str]
    workflow_execution_id: None = None
    workflow_run_id: None = None
    objective_spec: dict[str, Any] | None
    outcome: dict[str, Any] | None


class OptimizationDetailOut(OptimizationOut):
    evaluation: Reference | None
    project: Reference | None


class OptimizationPage(BaseModel):
    count: int
    results: list[OptimizationOut]
    next: str | None
    previous: str | None


class ListOptimizations(BaseModel):
    optimizations: OptimizationPage


class Observation(BaseModel):
    run: RunOut
    observation_type: str | None = "objective"
    score: float | None
    metadata: dict[str, Any] = Field(default_factory=dict)


class TrialOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    optimization_id: str
    algorithm_trial_key: str
    status: str
    metadata: dict[str, Any] = Field(alias="metadata_")
    parent_trial_id: str | None
    hypothesis: str | None
    resolution: str | None = None
    observations: list[Observation]


class TrialPage(BaseModel):
    count: int
    results: list[TrialOut]
    next: str | None
    previous: str | None


class ListTrials(BaseModel):
    trials: TrialPage
