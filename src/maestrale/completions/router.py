"""POST /v1/chat/completions, /v1/fim/completions and /v1/embeddings, plain and streamed."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi import Request, Response

from maestrale.completions.dependencies import CallerDep, CorrelationId, GatewayDep
from maestrale.completions.gateway import Call
from maestrale.completions.schemas import (
    ChatCompletionRequest,
    ChatCompletionResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    FIMCompletionRequest,
)
from maestrale.completions.shapes import (
    chunk_body,
    completion_body,
    encode_vector,
    quantize,
    usage_dict,
)
from maestrale.completions.validation import (
    CHARS_PER_TOKEN,
    engine_messages,
    validate_chat,
    validate_embeddings,
    validate_fim,
)
from maestrale.core.errors import AppError
from maestrale.core.routing import domain_router
from maestrale.core.sse import DONE, sse_event, sse_response
from maestrale.engines.types import ChatChunk, ChatRequest, FimRequest
from maestrale.engines.types import EmbeddingRequest as EngineEmbeddingRequest

router = domain_router(tags=["completions"])
OVERHEAD_HEADER = "x-maestrale-overhead-ms"


def _overhead(request: Request, call: Call) -> str:
    """Time Maestrale itself spent on the request so far: everything but the engine's time."""
    started = request.scope.get("state", {}).get("started", call.started)
    return f"{(time.perf_counter() - started - call.engine_seconds) * 1000:.3f}"


def _json(request: Request, call: Call, body: dict[str, Any]) -> Response:
    payload = orjson.dumps(body)
    return Response(
        payload, media_type="application/json", headers={OVERHEAD_HEADER: _overhead(request, call)}
    )


async def _stream(
    request: Request, call: Call, first: ChatChunk, rest: AsyncIterator[ChatChunk]
) -> Response:
    async def frames() -> AsyncIterator[bytes]:
        yield sse_event(chunk_body(call.completion_id, call.model, call.created, first))
        try:
            async for chunk in rest:
                yield sse_event(chunk_body(call.completion_id, call.model, call.created, chunk))
        except AppError as exc:
            # Headers are gone: the failure travels in the stream, and no [DONE] follows.
            yield sse_event(exc.body())
            return
        yield DONE

    response = sse_response(frames())
    response.headers[OVERHEAD_HEADER] = _overhead(request, call)
    return response


def _estimate(chars: int, max_tokens: int | None) -> int:
    return chars // CHARS_PER_TOKEN + (max_tokens or 0)


@router.post(
    "/chat/completions",
    response_model=None,
    responses={200: {"model": ChatCompletionResponse, "description": "JSON, or SSE chunks"}},
)
async def chat_completions(
    body: ChatCompletionRequest,
    request: Request,
    gateway: GatewayDep,
    caller: CallerDep,
    correlation: CorrelationId,
) -> Response:
    """Chat completion: plain, or streamed as server-sent events ending with `data: [DONE]`."""
    call = await gateway.open(caller, body.model, "chat", correlation_id=correlation)
    call.extra = body.metadata or {}
    validate_chat(body, call.spec)
    chars = sum(len(str(m.content or "")) for m in body.messages)
    await gateway.admit(call, _estimate(chars, body.max_tokens))
    messages = engine_messages(body.messages)
    tools = [tool.model_dump(exclude_none=True) for tool in body.tools] if body.tools else None
    engine_request = ChatRequest(
        model=call.upstream,
        messages=messages,
        tools=tools,
        tool_choice=(
            body.tool_choice.model_dump()
            if body.tool_choice is not None and not isinstance(body.tool_choice, str)
            else body.tool_choice
        ),
        parallel_tool_calls=body.parallel_tool_calls,
        response_format=body.response_format.model_dump(by_alias=True, exclude_none=True)
        if body.response_format
        else None,
        max_tokens=body.max_tokens,
        stop=body.stop_list(),
        temperature=body.temperature,
        top_p=body.top_p,
        random_seed=body.random_seed,
        n=body.n or 1,
        presence_penalty=body.presence_penalty,
        frequency_penalty=body.frequency_penalty,
    )
    if body.stream:
        first, rest = await gateway.stream(
            call, call.engine.chat_stream(engine_request), messages, tools
        )
        return await _stream(request, call, first, rest)
    result = await gateway.chat(call, engine_request)
    return _json(
        request, call, completion_body(call.completion_id, body.model, call.created, result)
    )


@router.post(
    "/fim/completions",
    response_model=None,
    responses={200: {"model": ChatCompletionResponse, "description": "JSON, or SSE chunks"}},
)
async def fim_completions(
    body: FIMCompletionRequest,
    request: Request,
    gateway: GatewayDep,
    caller: CallerDep,
    correlation: CorrelationId,
) -> Response:
    """Fill-in-the-middle completion of `prompt` before `suffix`; plain or streamed."""
    chars = len(body.prompt) + len(body.suffix or "")
    call = await gateway.open(caller, body.model, "fim", correlation_id=correlation)
    call.extra = body.metadata or {}
    validate_fim(body, call.spec)
    await gateway.admit(call, _estimate(chars, body.max_tokens))
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
    if body.stream:
        messages = [{"role": "user", "content": body.prompt}]
        first, rest = await gateway.stream(
            call, call.engine.fim_stream(engine_request), messages, None
        )
        return await _stream(request, call, first, rest)
    result = await gateway.fim(call, engine_request)
    return _json(
        request, call, completion_body(call.completion_id, body.model, call.created, result)
    )


@router.post("/embeddings", response_model=None, responses={200: {"model": EmbeddingResponse}})
async def embeddings(
    body: EmbeddingRequest,
    request: Request,
    gateway: GatewayDep,
    caller: CallerDep,
    correlation: CorrelationId,
) -> Response:
    """Embed one text or a list of texts (float, int8, uint8, binary or ubinary; JSON or base64)."""
    inputs = validate_embeddings(body)
    call = await gateway.open(caller, body.model, "embeddings", correlation_id=correlation)
    await gateway.admit(call, _estimate(sum(map(len, inputs)), 0))
    result = await gateway.embed(
        call,
        EngineEmbeddingRequest(
            model=call.upstream, inputs=inputs, output_dimension=body.output_dimension
        ),
    )
    data = [
        {
            "object": "embedding",
            "embedding": encode_vector(
                quantize(vector, body.output_dtype), body.encoding_format, body.output_dtype
            ),
            "index": i,
        }
        for i, vector in enumerate(result.vectors)
    ]
    return _json(
        request,
        call,
        {
            "id": f"embd-{call.completion_id[5:]}",
            "object": "list",
            "model": body.model,
            "data": data,
            "usage": usage_dict(result.usage),
        },
    )
