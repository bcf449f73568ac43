"""Request rules a schema cannot express. Each failure is a 400 that names the field."""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Any

import orjson

from maestrale.completions.schemas import (
    SERVICE_TIERS,
    ChatCompletionRequest,
    EmbeddingRequest,
    FIMCompletionRequest,
    Message,
    NamedToolChoice,
    TextCompletionRequest,
)
from maestrale.core.errors import BadRequest
from maestrale.engines.protocols import FormatChecker, honoured_options
from maestrale.engines.specs import ModelSpec
from maestrale.engines.text import content_text
from maestrale.engines.types import EngineError
from maestrale.gateway.estimates import CHARS_PER_TOKEN


class InvalidRequest(BadRequest):
    code = "invalid_request"


class UnsupportedParameter(BadRequest):
    code = "unsupported_parameter"


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


def _check_chat_fields(request: ChatCompletionRequest) -> None:
    """The rules between fields: OpenAI's and mistralai 3.x's."""
    wanted = request.max_completion_tokens
    if wanted is not None and request.max_tokens != wanted:
        # OpenAI refuses both ("not supported at the same time"); the same value twice is
        # harmless and some clients send it.
        raise _fail(
            f"max_tokens ({request.max_tokens}) and max_completion_tokens ({wanted}) differ: "
            "send one of them (max_completion_tokens is OpenAI's name of max_tokens)",
            "max_tokens",
        )
    if request.top_logprobs is not None and not request.logprobs:
        raise _fail("top_logprobs needs logprobs set to true", "top_logprobs")
    if request.top_prompt_logprobs is not None and not request.prompt_logprobs:
        raise _fail("top_prompt_logprobs needs prompt_logprobs set to true", "top_prompt_logprobs")
    mins, maxs = request.min_tokens, request.max_tokens
    if mins is not None and maxs is not None and mins > maxs:
        raise _fail("min_tokens must not exceed max_tokens", "min_tokens")
    tier = request.service_tier
    if tier is not None and tier not in SERVICE_TIERS:
        raise _fail(
            f"service_tier {tier!r} is not served: this server runs the standard tier only "
            f"(send one of {', '.join(sorted(SERVICE_TIERS))})",
            "service_tier",
        )


def check_format(request: ChatCompletionRequest, engine: object) -> None:
    """400 for an output format the engine cannot enforce (a JSON schema the local model's
    grammar cannot express), before the model is called: a streamed request is refused before
    its stream opens."""
    fmt = request.response_format
    if fmt is None or fmt.type == "text" or not isinstance(engine, FormatChecker):
        return
    try:
        engine.check_format(fmt.model_dump(by_alias=True, exclude_none=True))
    except EngineError as exc:
        raise _fail(exc.message, "response_format") from exc


def check_options(request: ChatCompletionRequest, spec: ModelSpec, engine: object) -> None:
    """400 naming the model for an optional field (top_k, repetition_penalty, min_tokens,
    logprobs, prompt_logprobs) that its engine cannot honour: refused, never ignored."""
    asked = {
        "top_k": request.top_k is not None,
        "repetition_penalty": request.repetition_penalty is not None,
        "min_tokens": bool(request.min_tokens),
        "logprobs": bool(request.logprobs),
        "prompt_logprobs": bool(request.prompt_logprobs),
    }
    wanted = [name for name, set_ in asked.items() if set_]
    if not wanted:
        return  # the common case: no Protocol check on the hot path
    honoured = honoured_options(engine)
    missing = [name for name in wanted if name not in honoured]
    if missing:
        raise UnsupportedParameter(
            f"model {spec.id} ({spec.engine} engine) cannot honour {', '.join(missing)}",
            param=missing[0],
        )


def check_reasoning(request: ChatCompletionRequest, spec: ModelSpec) -> None:
    """400 naming the model when a request asks a model without the `reasoning` capability to
    reason (`prompt_mode` "reasoning", a `reasoning_effort` other than "none"): it has no thinking
    to give, and an answer without it would pass for one."""
    if spec.has("reasoning"):
        return
    effort = request.reasoning_effort
    if request.prompt_mode == "reasoning" or effort not in (None, "none"):
        param = "prompt_mode" if request.prompt_mode == "reasoning" else "reasoning_effort"
        raise UnsupportedParameter(
            f"model {spec.id} cannot reason: it has no reasoning mode and gives no thinking "
            "(send no prompt_mode and no reasoning_effort, or reasoning_effort 'none')",
            param=param,
        )


def validate_chat(request: ChatCompletionRequest, spec: ModelSpec) -> None:
    _check_chat_fields(request)
    check_reasoning(request, spec)
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


def validate_text(request: TextCompletionRequest, spec: ModelSpec) -> None:
    """The rules of a legacy text completion that its schema cannot express."""
    if request.best_of is not None and request.best_of != request.n:
        raise UnsupportedParameter(
            "best_of is not supported: every choice generated is returned (use n)", param="best_of"
        )
    if request.logit_bias:
        raise UnsupportedParameter(f"model {spec.id} cannot honour logit_bias", param="logit_bias")
    if request.echo and request.logprobs is not None:
        raise UnsupportedParameter(
            f"echo with logprobs needs the prompt's log-probabilities, which model {spec.id} "
            "does not give",
            param="logprobs",
        )
    if request.suffix is not None and (request.n > 1 or request.logprobs is not None):
        raise _fail("a suffix (fill-in-the-middle) takes neither n > 1 nor logprobs", "suffix")
    prompt_chars = max(len(p) for p in request.prompts()) + len(request.suffix or "")
    check_max_tokens(spec, request.max_tokens, prompt_chars)


def validate_embeddings(request: EmbeddingRequest) -> list[str]:
    inputs = request.inputs()
    if not inputs:
        raise _fail("input must not be empty", "input")
    wanted, openai = request.output_dimension, request.dimensions
    if wanted is not None and openai is not None and wanted != openai:
        raise _fail(
            f"output_dimension ({wanted}) and dimensions ({openai}) are two names of the same "
            "field: give one, or the same value",
            "dimensions",
        )
    return inputs  # at most MAX_EMBEDDING_INPUTS: the schema refuses more (413)


def shortened(vectors: list[list[float]], dimension: int, spec: ModelSpec) -> list[list[float]]:
    """The first `dimension` values of each vector of a Matryoshka model, at unit length again;
    400 naming the model when it gives fewer."""
    native = min((len(v) for v in vectors), default=dimension)
    if dimension > native:
        raise _fail(
            f"model {spec.id!r} returns {native}-dimensional embeddings: the dimension asked "
            f"for ({dimension}) must be at most {native}",
            "dimensions",
        )
    out = []
    for vector in vectors:
        head = vector[:dimension]
        norm = math.sqrt(sum(x * x for x in head))
        out.append([x / norm for x in head] if norm > 0 else head)
    return out


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
