"""Wire models of pipelines (the SDK's CreatePipelineRequest, UpdatePipelineRequest, Pipeline,
PipelineConfig of kind judge-v1, PipelinesResponse)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

MAX_EXPRESSION = 10_000
MAX_SELECTORS = 20
MAX_DEFINITIONS = 20
# What a reference's `mapping` may redirect: the span attribute read as the judged input or
# output (instead of gen_ai.input.messages / gen_ai.output.messages).
MAPPING_KEYS = ("input", "output")

Percentage = Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)]


class ProbabilisticSampling(BaseModel):
    """Evaluate this share of the matching spans (a span's draw is fixed by its ids)."""

    type: Literal["probabilistic"] = "probabilistic"
    percentage: Percentage


class AttributeHashSampling(BaseModel):
    """Evaluate the spans whose value of `attribute` hashes into this share: every span with
    the same value (a conversation, a user) is evaluated, or none is."""

    type: Literal["attribute_hash"] = "attribute_hash"
    attribute: str = Field(min_length=1, max_length=256)
    percentage: Percentage


Sampling = Annotated[ProbabilisticSampling | AttributeHashSampling, Field(discriminator="type")]


class SelectorIn(BaseModel):
    source_kind: str = Field(max_length=32)
    filter: str | None = Field(default=None, max_length=MAX_EXPRESSION)


class JudgeReference(BaseModel):
    """The SDK's LlmJudgeReference: a judge by slug (its id, its name, or its name made a
    slug), with its sampling."""

    slug: str = Field(min_length=1, max_length=500)
    mapping: dict[Annotated[str, Field(max_length=32)], Annotated[str, Field(max_length=256)]] = (
        Field(default_factory=dict, max_length=len(MAPPING_KEYS))
    )
    sampling: Sampling | None = None


class PipelineCreate(BaseModel):
    name: str = Field(min_length=1, max_length=500)
    selectors: list[SelectorIn] = Field(max_length=MAX_SELECTORS)
    definitions: list[JudgeReference] = Field(max_length=MAX_DEFINITIONS)
    description: str | None = Field(default=None, max_length=100_000)
    enabled: bool = True


class PipelineUpdate(BaseModel):
    """Every field is optional; those sent replace the pipeline's."""

    name: str | None = Field(default=None, min_length=1, max_length=500)
    description: str | None = Field(default=None, max_length=100_000)
    selectors: list[SelectorIn] | None = Field(default=None, max_length=MAX_SELECTORS)
    definitions: list[JudgeReference] | None = Field(default=None, max_length=MAX_DEFINITIONS)
    enabled: bool | None = None


class SelectorOut(BaseModel):
    source_kind: str
    filter: str | None


class JudgeDefinitionV1(BaseModel):
    """The judge as the pipeline runs it: its model, its instructions and its result."""

    model: str
    prompt: str
    result_spec: dict[str, Any]
    temperature: float | None = 0.0
    top_p: float | None = None
    max_tokens: int | None = None
    random_seed: int | None = None
    mapping: dict[str, str]
    use_cache: bool = False


class PipelineConfigOut(BaseModel):
    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None = None
    scope: Literal["workspace"] = "workspace"
    workspace_id: str
    name: str
    slug: str
    pipeline_kind: Literal["judge-v1"] = "judge-v1"
    selectors: list[SelectorOut]
    enabled: bool
    definition: JudgeDefinitionV1
    sampling: dict[str, Any] | None
    scorer_slug: str | None
    scorer_version: int | None = None


class PipelineOut(BaseModel):
    id: str
    created_at: datetime
    updated_at: datetime
    workspace_id: str
    name: str
    slug: str
    description: str | None
    selectors: list[SelectorOut]
    enabled: bool
    creator_id: str | None
    pipeline_configs: list[PipelineConfigOut]


class PipelinePage(BaseModel):
    count: int
    results: list[PipelineOut]
    next: str | None = None
    previous: str | None = None


class PipelineList(BaseModel):
    pipelines: PipelinePage
