"""Translation between engine types and the OpenAI wire format (bodies out, results in)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Literal

import orjson

from maestrale.engines.types import (
    ChatRequest,
    ChatResult,
    Choice,
    EmbeddingRequest,
    EmbeddingResult,
    EngineError,
    FimRequest,
    Message,
    TextRequest,
    TokenLogprob,
    Usage,
)

FimApi = Literal["completions", "mistral"]

# Mistral's "any" means "call at least one tool", which OpenAI spells "required".
_TOOL_CHOICES = MappingProxyType({"any": "required"})
# Finish reasons the platform's clients know; OpenAI-only ones are folded into the nearest.
_FINISH_REASONS = MappingProxyType(
    {
        "stop": "stop",
        "length": "length",
        "model_length": "model_length",
        "tool_calls": "tool_calls",
        "function_call": "tool_calls",
        "error": "error",
        "content_filter": "stop",
    }
)


def invalid_response(what: str) -> EngineError:
    """The error for an upstream answer that is not the OpenAI shape it should be."""
    return EngineError(502, f"upstream sent an invalid response: {what}", code="upstream_error")


def loads(payload: bytes) -> Any:
    """Parse upstream JSON; broken JSON is the upstream's fault (502), never ours."""
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise invalid_response("not JSON") from None


def _put(body: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        body[key] = value


def _stream(body: dict[str, Any], stream: bool, *, usage_option: bool) -> None:
    if stream:
        body["stream"] = True
        if usage_option:
            body["stream_options"] = {"include_usage": True}


def chat_body(request: ChatRequest, *, stream: bool) -> dict[str, Any]:
    """The /chat/completions body of `request` (None fields left out, `extra` passed through)."""
    # Extra entries go in first, so that they can never override what the engine decides.
    body: dict[str, Any] = dict(request.extra) if request.extra else {}
    body["model"] = request.model
    body["messages"] = request.messages
    if request.tools:
        body["tools"] = request.tools
        # OpenAI refuses parallel_tool_calls in a request without tools.
        body["parallel_tool_calls"] = request.parallel_tool_calls
    choice = request.tool_choice
    if isinstance(choice, str):
        body["tool_choice"] = _TOOL_CHOICES.get(choice, choice)
    elif choice is not None:
        body["tool_choice"] = choice
    _put(body, "response_format", request.response_format)
    _put(body, "temperature", request.temperature)
    _put(body, "top_p", request.top_p)
    _put(body, "max_tokens", request.max_tokens)
    if request.stop:
        body["stop"] = request.stop
    _put(body, "seed", request.random_seed)
    if request.n != 1:
        body["n"] = request.n
    _put(body, "presence_penalty", request.presence_penalty)
    _put(body, "frequency_penalty", request.frequency_penalty)
    # vLLM's sampling extras (an upstream that does not take them refuses them: its 4xx).
    _put(body, "top_k", request.top_k)
    _put(body, "repetition_penalty", request.repetition_penalty)
    _put(body, "min_tokens", request.min_tokens)
    if request.logprobs is not None:
        body["logprobs"] = True
        body["top_logprobs"] = request.logprobs
    _stream(body, stream, usage_option=True)
    return body


# What of a chat body's `extra` shapes its prompt on vLLM, and so goes to its /tokenize too.
_PROMPT_EXTRAS = ("chat_template", "chat_template_kwargs", "continue_final_message")


def tokenize_body(request: ChatRequest) -> dict[str, Any]:
    """The body of vLLM's POST /tokenize for the prompt of a chat of `request`: its messages
    and tools through the chat template, with the generation prompt, as its chat renders them
    (vLLM renders the tools even under tool_choice "none", unless told otherwise at start)."""
    body: dict[str, Any] = {
        key: request.extra[key] for key in _PROMPT_EXTRAS if key in request.extra
    }
    body["model"] = request.model
    body["messages"] = request.messages
    if request.tools:
        body["tools"] = request.tools
    body["add_generation_prompt"] = True
    return body


def text_body(request: TextRequest, *, stream: bool) -> dict[str, Any]:
    """The classic /completions body of a raw text completion."""
    body: dict[str, Any] = {"model": request.model, "prompt": request.prompt}
    _put(body, "max_tokens", request.max_tokens)
    if request.stop:
        body["stop"] = request.stop
    _put(body, "temperature", request.temperature)
    _put(body, "top_p", request.top_p)
    _put(body, "seed", request.random_seed)
    if request.n != 1:
        body["n"] = request.n
    _put(body, "presence_penalty", request.presence_penalty)
    _put(body, "frequency_penalty", request.frequency_penalty)
    _put(body, "logprobs", request.logprobs)
    _stream(body, stream, usage_option=True)
    return body


def _token(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("token"), str):
        return None
    return _entry(raw["token"], raw.get("logprob"), raw.get("bytes"), raw.get("token_id"))


def _entry(token: str, logprob: Any, found: Any = None, token_id: Any = None) -> dict[str, Any]:
    return {
        "token": token,
        "logprob": float(logprob) if isinstance(logprob, int | float) else 0.0,
        "bytes": found if isinstance(found, list) else list(token.encode()),
        # OpenAI's answers carry no token ids: -1 says the upstream did not tell.
        "token_id": token_id if isinstance(token_id, int) else -1,
    }


def chat_logprobs(raw: Any) -> list[TokenLogprob] | None:
    """The token log-probabilities of an upstream chat choice (`logprobs.content`), if any."""
    content = raw.get("content") if isinstance(raw, dict) else None
    if not isinstance(content, list):
        return None
    out = []
    for item in content:
        entry = _token(item)
        if entry is None:
            raise invalid_response("a `logprobs.content` entry without its token")
        tops = item.get("top_logprobs")
        alternatives = [t for t in map(_token, tops if isinstance(tops, list) else []) if t]
        out.append({**entry, "top_logprobs": alternatives})
    return out


def text_logprobs(raw: Any) -> list[TokenLogprob] | None:
    """The token log-probabilities of a classic completion choice (tokens, token_logprobs,
    top_logprobs as {token: logprob}) in the chat shape."""
    if not isinstance(raw, dict) or not isinstance(raw.get("tokens"), list):
        return None
    logprobs = raw.get("token_logprobs") or []
    tops = raw.get("top_logprobs") or []
    out = []
    for i, token in enumerate(raw["tokens"]):
        value = logprobs[i] if i < len(logprobs) else None
        alternatives = tops[i] if i < len(tops) and isinstance(tops[i], dict) else {}
        top = [_entry(str(t), v) for t, v in alternatives.items()]
        out.append({**_entry(str(token), value), "top_logprobs": top})
    return out


def fim_path(api: FimApi) -> str:
    """The upstream path of a fill-in-the-middle call."""
    return "/fim/completions" if api == "mistral" else "/completions"


def fim_body(request: FimRequest, api: FimApi, *, stream: bool) -> dict[str, Any]:
    """The body of a FIM call: Mistral's /fim/completions or the classic /completions."""
    body: dict[str, Any] = {"model": request.model, "prompt": request.prompt}
    _put(body, "suffix", request.suffix)
    _put(body, "max_tokens", request.max_tokens)
    if api == "mistral":
        _put(body, "min_tokens", request.min_tokens)
    if request.stop:
        body["stop"] = request.stop
    _put(body, "temperature", request.temperature)
    _put(body, "top_p", request.top_p)
    _put(body, "random_seed" if api == "mistral" else "seed", request.random_seed)
    # A Mistral-shaped upstream always ends its stream with usage and may refuse the option.
    _stream(body, stream, usage_option=api == "completions")
    return body


def embed_body(request: EmbeddingRequest) -> dict[str, Any]:
    """The /embeddings body of `request`."""
    if request.output_dtype != "float":
        raise EngineError(
            400,
            f"this model returns only float embeddings, not {request.output_dtype!r}",
            code="invalid_request",
        )
    body: dict[str, Any] = {"model": request.model, "input": request.inputs}
    body["encoding_format"] = "float"
    _put(body, "dimensions", request.output_dimension)
    return body


def finish_reason(value: Any) -> str:
    """The platform's finish reason for an upstream one (unknown or missing → stop)."""
    return _FINISH_REASONS.get(value, "stop") if isinstance(value, str) else "stop"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse_usage(value: Any) -> Usage | None:
    """The usage object of an answer or chunk, None when the upstream sent none."""
    if not isinstance(value, dict):
        return None
    prompt = _int(value.get("prompt_tokens"))
    completion = value.get("completion_tokens")
    if completion is None:
        # Embedding (and some FIM) answers only carry prompt and total tokens.
        total = _int(value.get("total_tokens"))
        return Usage(prompt_tokens=prompt, completion_tokens=max(total - prompt, 0))
    return Usage(prompt_tokens=prompt, completion_tokens=_int(completion))


def _choices(answer: Any) -> list[dict[str, Any]]:
    if not isinstance(answer, dict):
        raise invalid_response("expected a JSON object")
    choices = answer.get("choices")
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
        raise invalid_response("no `choices` list")
    return choices


def _index(choice: dict[str, Any], default: int) -> int:
    index = choice.get("index")
    return index if isinstance(index, int) else default


def message_of(raw: Any) -> Message:
    """The assistant message of an upstream choice, reduced to the platform's keys."""
    if not isinstance(raw, dict):
        raise invalid_response("a choice without a message")
    return {
        "role": "assistant",
        "content": raw.get("content"),
        "tool_calls": raw.get("tool_calls") or None,
    }


def parse_chat_result(answer: Any) -> ChatResult:
    """A chat-completion answer (`choices[].message`) as a `ChatResult`."""
    choices = [
        Choice(
            index=_index(choice, i),
            message=message_of(choice.get("message")),
            finish_reason=finish_reason(choice.get("finish_reason")),
            logprobs=chat_logprobs(choice.get("logprobs")),
        )
        for i, choice in enumerate(_choices(answer))
    ]
    choices.sort(key=lambda choice: choice.index)
    return ChatResult(choices=choices, usage=parse_usage(answer.get("usage")) or Usage())


def parse_text_result(answer: Any) -> ChatResult:
    """A classic completion answer (`choices[].text`) as a `ChatResult`."""
    choices = []
    for i, choice in enumerate(_choices(answer)):
        text = choice.get("text")
        if not isinstance(text, str):
            raise invalid_response("a choice without text")
        message: Message = {"role": "assistant", "content": text, "tool_calls": None}
        reason = finish_reason(choice.get("finish_reason"))
        logprobs = text_logprobs(choice.get("logprobs"))
        choices.append(
            Choice(
                index=_index(choice, i), message=message, finish_reason=reason, logprobs=logprobs
            )
        )
    choices.sort(key=lambda choice: choice.index)
    return ChatResult(choices=choices, usage=parse_usage(answer.get("usage")) or Usage())


def parse_embeddings(answer: Any, count: int) -> EmbeddingResult:
    """An /embeddings answer as vectors in input order (upstreams may answer out of order)."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise invalid_response(f"expected {count} embeddings")
    vectors: list[list[float] | None] = [None] * count
    for position, item in enumerate(data):
        index = item.get("index", position) if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < count or vectors[index] is not None:
            raise invalid_response("embedding indexes do not match the inputs")
        vector = item.get("embedding")
        if not isinstance(vector, list):
            raise invalid_response("an embedding that is not a list of numbers")
        vectors[index] = vector
    usage = parse_usage(answer.get("usage")) or Usage()
    return EmbeddingResult(vectors=[v for v in vectors if v is not None], usage=usage)


def error_message(content: bytes, status: int) -> str:
    """The human message of an upstream error body, whatever its dialect."""
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        text = content.decode("utf-8", "replace").strip()
        return text[:500] or f"upstream returned HTTP {status}"
    found = message_in(body)
    return found or f"upstream returned HTTP {status}"


def message_in(body: Any) -> str | None:
    if isinstance(body, str):
        return body or None
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str) and error:
        return error
    message = body.get("message")
    if isinstance(message, str) and message:
        return message
    if isinstance(message, dict):
        # Mistral wraps validation errors: {"object": "error", "message": {"detail": [...]}}.
        return message_in(message)
    detail = body.get("detail")
    if isinstance(detail, str) and detail:
        return detail
    if isinstance(detail, dict):
        return message_in(detail)
    if isinstance(detail, list) and detail:
        # FastAPI validation errors: "body.messages: field required; ...".
        parts = []
        for item in detail:
            if isinstance(item, dict):
                loc = ".".join(str(part) for part in item.get("loc", ()))
                msg = str(item.get("msg", ""))
                parts.append(f"{loc}: {msg}" if loc else msg)
            else:
                parts.append(str(item))
        return "; ".join(parts)
    return None
