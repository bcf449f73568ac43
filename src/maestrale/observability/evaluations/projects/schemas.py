"""Wire models of projects and evaluations v2 (mistralai 3.x `Project`, `EvaluationV2`,
`EvaluatorV2`), and of their create and update extensions."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

SLUG = r"^[a-z0-9](?:[a-z0-9-]{0,98}[a-z0-9])?$"
Tag = Annotated[str, Field(min_length=1, max_length=200)]
Metadata = dict[str, Any]


class ProjectCreate(BaseModel):
    name: str = Field(min_length=1, max_length=500)
    slug: str | None = Field(default=None, pattern=SLUG)
    description: str | None = Field(default=None, max_length=100_000)
    is_favorite: bool = False


class ProjectUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=500)
    description: str | None = Field(default=None, max_length=100_000)
    is_favorite: bool | None = None


class _Stamped(BaseModel):
    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None


class _Owned(_Stamped):
    workspace_id: str
    creator_id: str


class EvaluationSummary(BaseModel):
    id: str
    name: str
    slug: str


class ProjectOut(_Owned):
    name: str
    slug: str
    description: str | None
    is_favorite: bool
    evaluations: list[EvaluationSummary]


class ProjectPage(BaseModel):
    count: int
    results: list[ProjectOut]
    next: str | None
    previous: str | None


class Projects(BaseModel):
    projects: ProjectPage


class EvaluationCreate(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    name: str = Field(min_length=1, max_length=500)
    slug: str | None = Field(default=None, pattern=SLUG)
    description: str | None = Field(default=None, max_length=100_000)
    tags: list[Tag] = Field(default_factory=list, max_length=100)
    metadata: dict[str, Any] = Field(default_factory=dict, alias="metadata_")
    # The judges that score each input, by id or by name (a judge's name is unique).
    evaluators: list[str] = Field(min_length=1, max_length=20)


class EvaluatorOut(_Stamped):
    """An evaluator (mistralai 3.x `EvaluatorV2`): a judge of the workspace."""

    name: str
    description: str | None
    tags: list[str]
    num_scores: int = 1
    goal: None = None
    aggregate_goal: None = None
    statistics: None = None
    weight: float = 1
    direction: str | None = None
    min_value: float | None = None
    max_value: float | None = None


class EvaluationOut(_Owned):
    model_config = ConfigDict(populate_by_name=True)

    project_id: str
    name: str
    slug: str
    description: str | None
    tags: list[str]
    metadata: dict[str, Any] = Field(alias="metadata_")
    is_favorite: bool = False
    evaluators: list[EvaluatorOut]


class EvaluationPage(BaseModel):
    count: int
    results: list[EvaluationOut]
    next: str | None
    previous: str | None


class EvaluationsV2(BaseModel):
    evaluations: EvaluationPage
