"""The steps of a completion call, shared by the live endpoints and batch lines: open the call
(model and capability), validate, admit (limits), build the engine request, call the engine and
shape the response body. The routers add only HTTP concerns (streaming, headers); batch lines run
the executors (`CHAT_ENDPOINT`, `FIM_ENDPOINT`, `EMBEDDINGS_ENDPOINT`), so a line is validated,
limited, accounted and answered exactly as the endpoint would answer the same body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maestrale.completions.hearing import has_audio, hear
from maestrale.completions.schemas import (
    SERVED_TIER,
    ChatCompletionRequest,
    EmbeddingRequest,
    FIMCompletionRequest,
)
from maestrale.completions.shapes import completion_body, encode_vector, quantize, usage_dict
from maestrale.completions.validation import (
    check_format,
    check_options,
    engine_messages,
    shortened,
    validate_chat,
    validate_embeddings,
    validate_fim,
)
from maestrale.core.validation import parse_body
from maestrale.engines.protocols import (
    ChatEngine,
    EmbeddingsEngine,
    FimEngine,
    HearsByTranscription,
)
from maestrale.engines.text import content_text
from maestrale.engines.types import ChatRequest, FimRequest
from maestrale.engines.types import EmbeddingRequest as EngineEmbeddingRequest
from maestrale.gateway.call import Call
from maestrale.gateway.capabilities import CHAT, EMBEDDINGS, FIM
from maestrale.gateway.estimates import estimate_tokens
from maestrale.gateway.executors import Endpoint
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller
from maestrale.guardrails.check import apply_guardrails


def _merged(metadata: dict[str, Any] | None, extra: Mapping[str, Any] | None) -> dict[str, Any]:
    # The live path has no extra: no copy there.
    return {**(metadata or {}), **extra} if extra else (metadata or {})


async def prepare_chat(
    gateway: Gateway,
    caller: Caller,
    body: ChatCompletionRequest,
    *,
    correlation_id: str,
    source: str = "api",
    extra: Mapping[str, Any] | None = None,
) -> tuple[Call[ChatEngine], ChatRequest]:
    """Open, validate and admit a chat call; return it with the engine request to send. Audio
    sent to a model that hears through transcription is transcribed first (`hearing`)."""
    call = await gateway.open(
        caller, body.model, CHAT, correlation_id=correlation_id, source=source
    )
    call.extra = _merged(body.metadata, extra)
    validate_chat(body, call.spec)
    check_options(body, call.spec, call.engine)
    check_format(body, call.engine)
    if isinstance(call.engine, HearsByTranscription) and has_audio(body.messages):
        messages = await hear(
            gateway,
            caller,
            body.model,
            body.messages,
            correlation_id=correlation_id,
            source=source,
        )
        body = body.model_copy(update={"messages": messages})
    if body.guardrails:  # checked on the input before the model is admitted
        await apply_guardrails(
            gateway,
            caller,
            body.guardrails,
            body.messages,
            correlation_id=correlation_id,
            source=source,
        )
    chars = sum(len(content_text(m.content)) for m in body.messages)
    await gateway.admit(call, estimate_tokens(chars, body.max_tokens))
    return call, engine_chat_request(call, body, engine_messages(body.messages))


def engine_chat_request(
    call: Call[ChatEngine], body: ChatCompletionRequest, messages: list[dict[str, Any]]
) -> ChatRequest:
    """The engine request of a validated chat request (its `messages` given in engine shape)."""
    choice = body.tool_choice
    tool_choice = (
        choice.model_dump() if choice is not None and not isinstance(choice, str) else choice
    )
    response_format = body.response_format
    return ChatRequest(
        model=call.upstream,
        messages=messages,
        tools=[tool.model_dump(exclude_none=True) for tool in body.tools] if body.tools else None,
        tool_choice=tool_choice,
        parallel_tool_calls=body.parallel_tool_calls,
        response_format=response_format.model_dump(by_alias=True, exclude_none=True)
        if response_format
        else None,
        max_tokens=body.max_tokens,
        stop=body.stop_list(),
        temperature=body.temperature,
        top_p=body.top_p,
        random_seed=body.random_seed,
        n=body.n or 1,
        presence_penalty=body.presence_penalty,
        frequency_penalty=body.frequency_penalty,
        top_k=body.top_k,
        repetition_penalty=body.repetition_penalty,
        min_tokens=body.min_tokens or None,
        logprobs=(body.top_logprobs or 0) if body.logprobs else None,
        prompt_logprobs=(body.top_prompt_logprobs or 0) if body.prompt_logprobs else None,
    )


def served_tier(body: ChatCompletionRequest) -> str | None:
    """The tier the usage reports (`UsageInfo.service_tier`): when the request named one."""
    return SERVED_TIER if body.service_tier is not None else None


async def complete_chat(
    gateway: Gateway,
    call: Call[ChatEngine],
    model: str,
    engine_request: ChatRequest,
    *,
    tier: str | None = None,
) -> dict[str, Any]:
    """Call the engine (accounted by the gateway) and shape the chat completion body."""
    result = await gateway.chat(call, engine_request)
    return completion_body(call.completion_id, model, call.created, result, tier=tier)


async def prepare_fim(
    gateway: Gateway,
    caller: Caller,
    body: FIMCompletionRequest,
    *,
    correlation_id: str,
    source: str = "api",
    extra: Mapping[str, Any] | None = None,
) -> tuple[Call[FimEngine], FimRequest]:
    """Open, validate and admit a FIM call; return it with the engine request to send."""
    chars = len(body.prompt) + len(body.suffix or "")
    call = await gateway.open(caller, body.model, FIM, correlation_id=correlation_id, source=source)
    call.extra = _merged(body.metadata, extra)
    validate_fim(body, call.spec)
    await gateway.admit(call, estimate_tokens(chars, body.max_tokens))
    engine_request = FimRequest(
        model=call.upstream,
        prompt=body.prompt,
        suffix=body.suffix,
        max_tokens=body.max_tokens,
        min_tokens=body.min_tokens,
        stop=body.stop_list(),
        temperature=body.temperature,
        top_p=body.top_p,
        random_seed=body.random_seed,
    )
    return call, engine_request


async def complete_fim(
    gateway: Gateway, call: Call[FimEngine], model: str, engine_request: FimRequest
) -> dict[str, Any]:
    """Call the engine (accounted by the gateway) and shape the FIM completion body."""
    result = await gateway.fim(call, engine_request)
    return completion_body(call.completion_id, model, call.created, result)


async def run_embeddings(
    gateway: Gateway,
    caller: Caller,
    body: EmbeddingRequest,
    *,
    correlation_id: str,
    source: str = "api",
    extra: Mapping[str, Any] | None = None,
) -> tuple[Call[EmbeddingsEngine], dict[str, Any]]:
    """The whole embeddings call: validate, open, admit, embed, and the response body."""
    inputs = validate_embeddings(body)
    call = await gateway.open(
        caller, body.model, EMBEDDINGS, correlation_id=correlation_id, source=source
    )
    call.extra = _merged(body.metadata, extra)
    await gateway.admit(call, estimate_tokens(sum(map(len, inputs)), 0))
    # A Matryoshka model's vectors are cut here; any other engine gives the dimension itself
    # or refuses it (400 naming the model).
    wanted = body.dimension()
    cut = wanted is not None and call.spec.matryoshka
    result = await gateway.embed(
        call,
        EngineEmbeddingRequest(
            model=call.upstream, inputs=inputs, output_dimension=None if cut else wanted
        ),
    )
    vectors = result.vectors
    if cut and wanted is not None:
        vectors = shortened(vectors, wanted, call.spec)
    data = [
        {
            "object": "embedding",
            "embedding": encode_vector(
                quantize(vector, body.output_dtype), body.encoding_format, body.output_dtype
            ),
            "index": i,
        }
        for i, vector in enumerate(vectors)
    ]
    response = {
        "id": f"embd-{call.completion_id[5:]}",
        "object": "list",
        "model": body.model,
        "data": data,
        "usage": usage_dict(result.usage),
    }
    return call, response


async def _chat_executor(
    gateway: Gateway,
    caller: Caller,
    body: dict[str, Any],
    correlation_id: str,
    source: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    request: ChatCompletionRequest = parse_body(ChatCompletionRequest, body)
    call, engine_request = await prepare_chat(
        gateway, caller, request, correlation_id=correlation_id, source=source, extra=extra
    )
    return await complete_chat(
        gateway, call, request.model, engine_request, tier=served_tier(request)
    )


async def _fim_executor(
    gateway: Gateway,
    caller: Caller,
    body: dict[str, Any],
    correlation_id: str,
    source: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    request: FIMCompletionRequest = parse_body(FIMCompletionRequest, body)
    call, engine_request = await prepare_fim(
        gateway, caller, request, correlation_id=correlation_id, source=source, extra=extra
    )
    return await complete_fim(gateway, call, request.model, engine_request)


async def _embeddings_executor(
    gateway: Gateway,
    caller: Caller,
    body: dict[str, Any],
    correlation_id: str,
    source: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    request: EmbeddingRequest = parse_body(EmbeddingRequest, body)
    _, response = await run_embeddings(
        gateway, caller, request, correlation_id=correlation_id, source=source, extra=extra
    )
    return response


# The executors of the three endpoints (see `gateway.executors`), for batch lines.
CHAT_ENDPOINT = Endpoint(CHAT, _chat_executor)
FIM_ENDPOINT = Endpoint(FIM, _fim_executor)
EMBEDDINGS_ENDPOINT = Endpoint(EMBEDDINGS, _embeddings_executor)
