"""Request rules a schema cannot express. Each failure is a 400 that names the field."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import orjson

from maestrale.completions.schemas import (
    ChatCompletionRequest,
    EmbeddingRequest,
    FIMCompletionRequest,
    Message,
    NamedToolChoice,
)
from maestrale.core.errors import BadRequest
from maestrale.engines.specs import ModelSpec
from maestrale.engines.text import content_text
from maestrale.gateway.estimates import CHARS_PER_TOKEN


class InvalidRequest(BadRequest):
    code = "invalid_request"


def _fail(message: str, param: str) -> InvalidRequest:
    return InvalidRequest(message, param=param)


def check_max_tokens(spec: ModelSpec, max_tokens: int | None, prompt_chars: int) -> None:
    if max_tokens is None:
        return
    limit = spec.max_context_length
    if max_tokens > limit:
        raise _fail(
            f"max_tokens ({max_tokens}) exceeds the context length of {spec.id} ({limit})",
            "max_tokens",
        )
    estimate = prompt_chars // CHARS_PER_TOKEN
    if estimate + max_tokens > limit:
        raise _fail(
            f"the prompt (about {estimate} tokens) plus max_tokens ({max_tokens}) exceeds the "
            f"context length of {spec.id} ({limit})",
            "max_tokens",
        )


# Content chunks a model takes only with a capability: chunk type → (capability, what it is).
_CHUNK_CAPABILITIES = MappingProxyType(
    {"image_url": ("vision", "images"), "input_audio": ("audio", "audio")}
)


def check_chunks(content: list[dict[str, Any]], spec: ModelSpec, where: str) -> None:
    """400 for a chunk the model cannot take (an image without `vision`, audio without `audio`):
    such a chunk is refused, never answered as if it were not there."""
    for chunk in content:
        needed = _CHUNK_CAPABILITIES.get(chunk["type"])
        if needed is not None and not spec.has(needed[0]):
            capability, what = needed
            raise _fail(
                f"{where}: model {spec.id} does not accept {what} (no {capability} capability)",
                f"{where}.content",
            )


def _check_messages(messages: list[Message], spec: ModelSpec) -> None:
    if not messages:
        raise _fail("messages must not be empty", "messages")
    call_ids: set[str] = set()
    call_names: set[str] = set()
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if message.role in ("system", "user") and message.content is None:
            raise _fail(f"{where}: a {message.role} message needs content", f"{where}.content")
        if message.prefix and (message.role != "assistant" or i != len(messages) - 1):
            raise _fail(f"{where}: only the last message, an assistant one, may be a prefix", where)
        if isinstance(message.content, list):
            check_chunks(message.content, spec, where)
        if message.role == "assistant" and message.tool_calls:
            call_ids.update(call.id for call in message.tool_calls)
            call_names.update(call.function.name for call in message.tool_calls)
        if message.role == "tool":
            matched = (
                message.tool_call_id in call_ids
                if message.tool_call_id is not None
                else message.name in call_names
            )
            if not matched:
                raise _fail(
                    f"{where}: tool message answers no earlier tool call "
                    f"(tool_call_id {message.tool_call_id!r})",
                    f"{where}.tool_call_id",
                )


def _check_tools(request: ChatCompletionRequest, spec: ModelSpec) -> None:
    names = [tool.function.name for tool in request.tools or []]
    if len(names) != len(set(names)):
        raise _fail("tools: function names must be unique", "tools")
    choice = request.tool_choice
    if names and not spec.has("function_calling") and choice != "none":
        raise _fail(f"model {spec.id} does not support function calling", "tools")
    if isinstance(choice, NamedToolChoice) and choice.function.name not in names:
        raise _fail(
            f"tool_choice names {choice.function.name!r}, which is not among the tools",
            "tool_choice",
        )
    if choice in ("any", "required") and not names:
        raise _fail(f"tool_choice {choice!r} needs at least one tool", "tool_choice")


def validate_chat(request: ChatCompletionRequest, spec: ModelSpec) -> None:
    _check_messages(request.messages, spec)
    _check_tools(request, spec)
    fmt = request.response_format
    if fmt is not None and fmt.type == "json_schema" and fmt.json_schema is None:
        raise _fail("response_format json_schema needs a `json_schema`", "response_format")
    prompt_chars = sum(len(content_text(m.content)) for m in request.messages)
    check_max_tokens(spec, request.max_tokens, prompt_chars)


def validate_fim(request: FIMCompletionRequest, spec: ModelSpec) -> None:
    prompt_chars = len(request.prompt) + len(request.suffix or "")
    check_max_tokens(spec, request.max_tokens, prompt_chars)
    mins, maxs = request.min_tokens, request.max_tokens
    if mins is not None and maxs is not None and mins > maxs:
        raise _fail("min_tokens must not exceed max_tokens", "min_tokens")


def validate_embeddings(request: EmbeddingRequest) -> list[str]:
    inputs = request.inputs()
    if not inputs:
        raise _fail("input must not be empty", "input")
    return inputs  # at most MAX_EMBEDDING_INPUTS: the schema refuses more (413)


def engine_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Wire messages for the engines: no nulls, tool-call arguments as JSON strings."""
    out: list[dict[str, Any]] = []
    for message in messages:
        doc: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.tool_calls:
            doc["tool_calls"] = [
                {
                    "id": call.id,
                    "type": call.type,
                    "function": {
                        "name": call.function.name,
                        "arguments": call.function.arguments
                        if isinstance(call.function.arguments, str)
                        else orjson.dumps(call.function.arguments).decode(),
                    },
                }
                for call in message.tool_calls
            ]
        if message.tool_call_id is not None:
            doc["tool_call_id"] = message.tool_call_id
        if message.name is not None:
            doc["name"] = message.name
        if message.prefix:
            doc["prefix"] = True
        out.append(doc)
    return out
