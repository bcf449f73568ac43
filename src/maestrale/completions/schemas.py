"""Wire models of chat, FIM and embeddings requests (the SDK's ChatCompletionRequest,
FIMCompletionRequest, EmbeddingRequest). Unknown fields are accepted and ignored.

Responses are built as plain dicts on the hot path (see `shapes.py`); the response models here
document them in the OpenAPI schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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


class FIMCompletionRequest(_Sampling):
    prompt: str
    suffix: str | None = None
    min_tokens: Annotated[int, Field(ge=0)] | None = None


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
    output_dtype: Literal["float", "int8", "uint8", "binary", "ubinary"] = "float"
    encoding_format: Literal["float", "base64"] = "float"

    def inputs(self) -> list[str]:
        return [self.input] if isinstance(self.input, str) else self.input


# Response models: for the OpenAPI document only (the hot path writes dicts).


class UsageInfo(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class AssistantMessageOut(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[dict[str, Any]] | None = None
    prefix: bool = False


class ChoiceOut(BaseModel):
    index: int
    message: AssistantMessageOut
    finish_reason: str


class ChatCompletionResponse(BaseModel):
    id: str
    object: str
    model: str
    created: int
    choices: list[ChoiceOut]
    usage: UsageInfo


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
