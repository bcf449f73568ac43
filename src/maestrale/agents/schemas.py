"""Wire models of the /v1/agents group (the SDK's CreateAgentRequest, UpdateAgentRequest, Agent,
AgentListPage, AgentAliasResponse)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from maestrale.guardrails.schemas import Guardrails
from maestrale.registries.references import MAX_SKILLS, PromptRef, SkillRef


class FunctionDef(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-zA-Z0-9_-]+$")
    description: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    strict: bool | None = None


class AgentToolIn(BaseModel):
    """A tool of an agent: a function the client runs, or one of the platform's tool types
    (kept as given, with its own fields)."""

    model_config = ConfigDict(extra="allow")

    type: Literal[
        "function",
        "web_search",
        "web_search_premium",
        "code_interpreter",
        "image_generation",
        "document_library",
        "connector",
    ] = "function"
    function: FunctionDef | None = None

    @model_validator(mode="after")
    def _function_needs_definition(self) -> AgentToolIn:
        if self.type == "function" and self.function is None:
            raise ValueError("a function tool needs `function` (name, parameters)")
        return self

    def stored(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class CompletionArgsIn(BaseModel):
    """The completion arguments an agent passes to its model (kept as given)."""

    model_config = ConfigDict(extra="ignore")

    stop: str | list[str] | None = None
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: int | None = Field(default=None, ge=0)
    random_seed: int | None = Field(default=None, ge=0)
    prediction: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    tool_choice: Literal["auto", "none", "any", "required"] | None = None
    reasoning_effort: str | None = None

    def stored(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class AgentFields(BaseModel):
    model_config = ConfigDict(extra="ignore")

    instructions: str | None = None
    tools: list[AgentToolIn] | None = Field(default=None, max_length=128)
    completion_args: CompletionArgsIn | None = None
    guardrails: Guardrails | None = None
    description: str | None = None
    handoffs: list[str] | None = Field(default=None, max_length=64)
    metadata: dict[str, Any] | None = None
    version_message: str | None = Field(default=None, max_length=4096)
    # This server's extension: a stored prompt (its rendered text leads the instructions) and
    # skills (bundled after them), resolved at each run unless pinned to a version.
    prompt: PromptRef | None = None
    skills: list[SkillRef] | None = Field(default=None, max_length=MAX_SKILLS)


class AgentCreate(AgentFields):
    model: str = Field(min_length=1, max_length=256)
    name: str = Field(min_length=1, max_length=512)


class AgentUpdate(AgentFields):
    model: str | None = Field(default=None, min_length=1, max_length=256)
    name: str | None = Field(default=None, min_length=1, max_length=512)
    deployment_chat: bool | None = None


class AgentOut(BaseModel):
    model: str
    name: str
    id: str
    version: int
    versions: list[int]
    created_at: datetime
    updated_at: datetime
    deployment_chat: bool
    source: str
    instructions: str | None
    tools: list[dict[str, Any]]
    completion_args: dict[str, Any]
    guardrails: list[dict[str, Any]] | None
    description: str | None
    handoffs: list[str] | None
    metadata: dict[str, Any] | None
    object: Literal["agent"] = "agent"
    version_message: str | None
    prompt: dict[str, Any] | None = None
    skills: list[dict[str, Any]] | None = None


class AgentListPage(BaseModel):
    data: list[AgentOut]
    object: Literal["list"] = "list"
    next_page_token: str | None


class AgentAliasOut(BaseModel):
    alias: str
    version: int
    created_at: datetime
    updated_at: datetime
