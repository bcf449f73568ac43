"""Wire models of judges and live judging."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ClassificationOption(BaseModel):
    value: str = Field(min_length=1, max_length=500)
    description: str = Field(max_length=10_000)


class ClassificationOutput(BaseModel):
    type: Literal["CLASSIFICATION"] = "CLASSIFICATION"
    options: list[ClassificationOption] = Field(min_length=1, max_length=100)

    @model_validator(mode="after")
    def _unique(self) -> ClassificationOutput:
        values = [o.value for o in self.options]
        if len(set(values)) != len(values):
            raise ValueError("option values must be unique")
        return self


class RegressionOutput(BaseModel):
    type: Literal["REGRESSION"] = "REGRESSION"
    min_description: str = Field(max_length=10_000)
    max_description: str = Field(max_length=10_000)
    min: float = 0
    max: float = 1

    @model_validator(mode="after")
    def _range(self) -> RegressionOutput:
        if not self.min < self.max:
            raise ValueError("min must be smaller than max")
        return self


JudgeOutputSpec = Annotated[ClassificationOutput | RegressionOutput, Field(discriminator="type")]


class JudgeDefinition(BaseModel):
    """CreateJudgeRequest / UpdateJudgeRequest: every field of a judge."""

    name: str = Field(min_length=1, max_length=500)
    description: str = Field(max_length=100_000)
    model_name: str = Field(min_length=1, max_length=200)
    output: JudgeOutputSpec
    instructions: str = Field(max_length=100_000)
    tools: list[str] = Field(max_length=0, description="judges with tools are not supported")


class JudgeOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    owner_id: str
    workspace_id: str
    name: str
    description: str
    model_name: str
    output: dict[str, Any]
    instructions: str
    tools: list[str]
    # See judges.service: the judge's earlier revisions, each a judge of its own.
    up_revision: str | None = None
    down_revision: str | None = None
    base_revision: str | None = None


class JudgePage(BaseModel):
    count: int
    results: list[JudgeOut]
    next: str | None = None
    previous: str | None = None


class JudgeList(BaseModel):
    judges: JudgePage


class JudgeConversationRequest(BaseModel):
    messages: list[dict[str, Any]] = Field(min_length=1, max_length=10_000)
    properties: dict[str, Any] | None = None


class JudgeWithDefinition(BaseModel):
    judge_definition: JudgeDefinition


class JudgeOutput(BaseModel):
    analysis: str
    answer: str | float
