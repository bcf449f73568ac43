"""POST /v1/chat/completions, /v1/fim/completions and /v1/embeddings, plain and streamed."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi import Request, Response

from maestrale.completions.dependencies import CallerDep, CorrelationId, GatewayDep
from maestrale.completions.execute import (
    complete_chat,
    complete_fim,
    prepare_chat,
    prepare_fim,
    run_embeddings,
)
from maestrale.completions.gateway import Call
from maestrale.completions.schemas import (
    ChatCompletionRequest,
    ChatCompletionResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    FIMCompletionRequest,
)
from maestrale.completions.shapes import chunk_body
from maestrale.core.errors import AppError
from maestrale.core.routing import domain_router
from maestrale.core.sse import DONE, sse_event, sse_response
from maestrale.engines.types import ChatChunk

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
    call, engine_request = await prepare_chat(gateway, caller, body, correlation_id=correlation)
    if body.stream:
        first, rest = await gateway.stream(
            call,
            call.engine.chat_stream(engine_request),
            engine_request.messages,
            engine_request.tools,
        )
        return await _stream(request, call, first, rest)
    return _json(request, call, await complete_chat(gateway, call, body.model, engine_request))


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
    call, engine_request = await prepare_fim(gateway, caller, body, correlation_id=correlation)
    if body.stream:
        messages = [{"role": "user", "content": body.prompt}]
        first, rest = await gateway.stream(
            call, call.engine.fim_stream(engine_request), messages, None
        )
        return await _stream(request, call, first, rest)
    return _json(request, call, await complete_fim(gateway, call, body.model, engine_request))


@router.post("/embeddings", response_model=None, responses={200: {"model": EmbeddingResponse}})
async def embeddings(
    body: EmbeddingRequest,
    request: Request,
    gateway: GatewayDep,
    caller: CallerDep,
    correlation: CorrelationId,
) -> Response:
    """Embed one text or a list of texts (float, int8, uint8, binary or ubinary; JSON or base64)."""
    call, response = await run_embeddings(gateway, caller, body, correlation_id=correlation)
    return _json(request, call, response)
