"""Wire models of chat, FIM and embeddings requests (the SDK's ChatCompletionRequest,
FIMCompletionRequest, EmbeddingRequest). Unknown fields are accepted and ignored.

Responses are built as plain dicts on the hot path (see `shapes.py`); the response models here
document them in the OpenAPI schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from maestrale.core.sizes import MAX_EMBEDDING_INPUTS, MAX_MESSAGES, at_most
from maestrale.gateway.messages import Message as Message
from maestrale.guardrails.schemas import Guardrails


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FunctionIn(_In):
    name: str = Field(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9_.\-]+$")
    description: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    strict: bool | None = None


class ToolIn(_In):
    type: str = "function"
    function: FunctionIn


class FunctionName(_In):
    name: str


class NamedToolChoice(_In):
    type: str = "function"
    function: FunctionName


ToolChoice = Literal["auto", "none", "any", "required"] | NamedToolChoice


class JsonSchemaIn(_In):
    name: str = Field(min_length=1, max_length=256)
    schema_: dict[str, Any] = Field(alias="schema")
    description: str | None = None
    strict: bool | None = None


class ResponseFormat(_In):
    type: Literal["text", "json_object", "json_schema"] = "text"
    json_schema: JsonSchemaIn | None = None


class Prediction(_In):
    type: Literal["content"] = "content"
    content: str = ""


Messages = Annotated[
    list[Message], at_most(MAX_MESSAGES, "messages"), Field(max_length=MAX_MESSAGES)
]
Stop = str | list[str]
Temperature = Annotated[float, Field(ge=0, le=2)]
Penalty = Annotated[float, Field(ge=-2, le=2)]
# OpenAI's bound of `top_logprobs` (alternatives per token).
TopLogprobs = Annotated[int, Field(ge=0, le=20)]
# The one tier this server runs: what mistralai 3.x ("auto", "standard_only") and OpenAI
# ("auto", "default") may ask for and get; others (priority, flex, scale) are refused.
SERVICE_TIERS = frozenset({"auto", "standard_only", "default"})
SERVED_TIER = "standard"


class _Sampling(_In):
    model: str = Field(min_length=1, max_length=256)
    temperature: Temperature | None = None
    top_p: Annotated[float, Field(ge=0, le=1)] | None = None
    max_tokens: Annotated[int, Field(ge=0)] | None = None
    stream: bool = False
    stop: Stop | None = None
    random_seed: Annotated[int, Field(ge=0)] | None = None
    metadata: dict[str, Any] | None = None
    prompt_cache_key: str | None = None

    def stop_list(self) -> list[str]:
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else [s for s in self.stop if s]


class ChatCompletionRequest(_Sampling):
    messages: Messages
    response_format: ResponseFormat | None = None
    tools: list[ToolIn] | None = None
    tool_choice: ToolChoice | None = None
    presence_penalty: Penalty | None = None
    frequency_penalty: Penalty | None = None
    n: Annotated[int, Field(ge=1, le=16)] | None = None
    prediction: Prediction | None = None
    parallel_tool_calls: bool = True
    reasoning_effort: str | None = None
    prompt_mode: str | None = None
    guardrails: Guardrails | None = None
    safe_prompt: bool = False
    # mistralai 3.x's fields; `validation.check_options` refuses those the model cannot honour.
    min_tokens: Annotated[int, Field(ge=0)] | None = None
    repetition_penalty: Annotated[float, Field(gt=0, le=10)] | None = None
    top_k: Annotated[int, Field(ge=1, le=1000)] | None = None
    logprobs: bool | None = None
    top_logprobs: TopLogprobs | None = None
    prompt_logprobs: bool | None = None
    top_prompt_logprobs: TopLogprobs | None = None
    service_tier: Annotated[str, Field(max_length=64)] | None = None
    # OpenAI's name of max_tokens (which it deprecates): read as max_tokens; both given and
    # different is a 400 (`validation`), as OpenAI refuses both.
    max_completion_tokens: Annotated[int, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _max_completion_tokens(self) -> ChatCompletionRequest:
        if self.max_tokens is None and self.max_completion_tokens is not None:
            self.max_tokens = self.max_completion_tokens
        return self


class FIMCompletionRequest(_Sampling):
    prompt: str
    suffix: str | None = None
    min_tokens: Annotated[int, Field(ge=0)] | None = None


class StreamOptions(_In):
    include_usage: bool = False


class TextCompletionRequest(_In):
    """OpenAI's legacy `/v1/completions` request (`client.completions.create`)."""

    model: str = Field(min_length=1, max_length=256)
    prompt: str | Annotated[list[str], Field(min_length=1, max_length=16)]
    suffix: str | None = None
    # OpenAI's default for this endpoint.
    max_tokens: Annotated[int, Field(ge=0)] | None = 16
    temperature: Temperature | None = None
    top_p: Annotated[float, Field(ge=0, le=1)] | None = None
    n: Annotated[int, Field(ge=1, le=16)] = 1
    best_of: Annotated[int, Field(ge=1, le=16)] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    stop: Stop | None = None
    echo: bool = False
    logprobs: Annotated[int, Field(ge=0, le=5)] | None = None
    seed: Annotated[int, Field(ge=0)] | None = None
    presence_penalty: Penalty | None = None
    frequency_penalty: Penalty | None = None
    logit_bias: dict[str, float] | None = None
    metadata: dict[str, Any] | None = None
    guardrails: Guardrails | None = None

    def prompts(self) -> list[str]:
        return [self.prompt] if isinstance(self.prompt, str) else self.prompt

    def stop_list(self) -> list[str]:
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else [s for s in self.stop if s]


class EmbeddingRequest(_In):
    model: str = Field(min_length=1, max_length=256)
    input: (
        str
        | Annotated[
            list[str],
            at_most(MAX_EMBEDDING_INPUTS, "input"),
            Field(max_length=MAX_EMBEDDING_INPUTS),
        ]
    )
    metadata: dict[str, Any] | None = None
    output_dimension: Annotated[int, Field(ge=1, le=8192)] | None = None
    # OpenAI's name of output_dimension (its SDK and the clients built on it send this one).
    dimensions: Annotated[int, Field(ge=1, le=8192)] | None = None
    output_dtype: Literal["float", "int8", "uint8", "binary", "ubinary"] = "float"
    encoding_format: Literal["float", "base64"] = "float"

    def inputs(self) -> list[str]:
        return [self.input] if isinstance(self.input, str) else self.input

    def dimension(self) -> int | None:
        """The dimension asked for, by either name (`validate_embeddings` checks they agree)."""
        return self.output_dimension if self.output_dimension is not None else self.dimensions


# Response models: for the OpenAPI document only (the hot path writes dicts).


class UsageInfo(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    service_tier: str | None = None  # "standard", when the request named a tier


class AssistantMessageOut(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[dict[str, Any]] | None = None
    prefix: bool = False


class TokenLogprobOut(BaseModel):
    token: str
    logprob: float
    bytes: list[int]
    token_id: int


class TopTokenLogprobOut(TokenLogprobOut):
    top_logprobs: list[TokenLogprobOut] | None = None


class LogprobsOut(BaseModel):
    content: list[TopTokenLogprobOut]


class ChoiceOut(BaseModel):
    index: int
    message: AssistantMessageOut
    finish_reason: str
    logprobs: LogprobsOut | None = None  # present when the request asked for logprobs


class ChatCompletionResponse(BaseModel):
    id: str
    object: str
    model: str
    created: int
    choices: list[ChoiceOut]
    usage: UsageInfo


class TextChoiceOut(BaseModel):
    text: str
    index: int
    logprobs: dict[str, Any] | None  # tokens, token_logprobs, top_logprobs, text_offset
    finish_reason: str | None


class TextCompletionResponse(BaseModel):
    id: str
    object: Literal["text_completion"] = "text_completion"
    model: str
    created: int
    choices: list[TextChoiceOut]
    usage: UsageInfo | None = None


class EmbeddingDataOut(BaseModel):
    object: Literal["embedding"] = "embedding"
    embedding: list[float] | list[int] | str
    index: int


class EmbeddingResponse(BaseModel):
    id: str
    object: Literal["list"] = "list"
    model: str
    data: list[EmbeddingDataOut]
    usage: UsageInfo
