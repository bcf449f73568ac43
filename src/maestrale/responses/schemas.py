"""Wire models of the /v1/responses group: the request of `responses.create` and
`responses.count_input_tokens` (mistralai 3.x's CreateResponseRequest and
CountResponseInputTokensRequest, which are OpenAI's Responses request), read leniently: unknown
fields are ignored, the items and tools are checked by `items` and `tools` with errors that name
their position."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from maestrale.core.sizes import MAX_CONVERSATION_INPUTS, at_most
from maestrale.registries.references import MAX_SKILLS, PromptRef, SkillRef

Input = (
    str
    | Annotated[
        list[dict[str, Any]],
        at_most(MAX_CONVERSATION_INPUTS, "input"),
        Field(max_length=MAX_CONVERSATION_INPUTS),
    ]
)
# OpenAI's bounds of a response's metadata: 16 pairs, keys of 64 characters, values of 512.
Metadata = Annotated[
    dict[Annotated[str, Field(max_length=64)], Annotated[str, Field(max_length=512)]],
    Field(max_length=16),
]


class Reasoning(BaseModel):
    model_config = ConfigDict(extra="ignore")

    effort: str | None = Field(default=None, max_length=16)


class TextConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    format: dict[str, Any] | None = None
    verbosity: Literal["low", "medium", "high"] | None = None


class AgentRef(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(max_length=200)
    version: str | int | None = None


class ResponseInputs(BaseModel):
    """What a model reads of a response request: the fields `input_tokens` counts too."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = Field(default=None, max_length=256)
    # An agent instead of a model (this server's extension: its model, instructions and tools),
    # by id, or as `agent`: its id, or `{"id", "version"}`.
    agent_id: str | None = Field(default=None, max_length=200)
    agent_version: str | int | None = None
    agent: str | AgentRef | None = None
    input: Input
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = Field(default=None, max_length=128)
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    previous_response_id: str | None = Field(default=None, max_length=128)
    conversation: str | dict[str, Any] | None = None
    # A stored prompt (`{id, version, variables}`, as OpenAI's), rendered as the instructions'
    # start; and skills (this server's extension), bundled after them.
    prompt: PromptRef | None = None
    skills: list[SkillRef] | None = Field(default=None, max_length=MAX_SKILLS)
    text: TextConfig | None = None
    reasoning: Reasoning | None = None
    truncation: Literal["auto", "disabled"] | None = None

    @model_validator(mode="after")
    def _agent(self) -> ResponseInputs:
        if self.agent is not None and self.agent_id is None:
            ref = self.agent if isinstance(self.agent, AgentRef) else AgentRef(id=self.agent)
            self.agent_id, self.agent_version = ref.id, ref.version
        return self


class ResponseCreate(ResponseInputs):
    stream: bool = False
    # OpenAI stores by default; mistralai 3.x sends `store: false` (its platform keeps nothing).
    store: bool | None = None
    background: bool | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_output_tokens: int | None = Field(default=None, ge=1, le=2**31 - 1)
    max_tool_calls: int | None = Field(default=None, ge=1, le=2**31 - 1)
    metadata: Metadata | None = None
    include: list[Annotated[str, Field(max_length=128)]] | None = Field(default=None, max_length=32)
    user: str | None = Field(default=None, max_length=512)
    safety_identifier: str | None = Field(default=None, max_length=512)
    prompt_cache_key: str | None = Field(default=None, max_length=512)
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    service_tier: str | None = Field(default=None, max_length=32)
