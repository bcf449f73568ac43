"""POST /v1/chat/completions, /v1/fim/completions and /v1/embeddings, plain and streamed."""

from __future__ import annotations

from fastapi import Request, Response

from maestrale.completions.execute import (
    complete_chat,
    complete_fim,
    prepare_chat,
    prepare_fim,
    run_embeddings,
    served_tier,
)
from maestrale.completions.responses import stream_response
from maestrale.completions.schemas import (
    ChatCompletionRequest,
    ChatCompletionResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    FIMCompletionRequest,
    TextCompletionRequest,
    TextCompletionResponse,
)
from maestrale.completions.text import respond_text
from maestrale.core.errors import MODEL_ERRORS, error_responses
from maestrale.core.routing import domain_router
from maestrale.core.sse import streamed
from maestrale.gateway.dependencies import CallerDep, CorrelationId, GatewayDep
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller
from maestrale.gateway.responses import json_response

router = domain_router(tags=["completions"], responses=error_responses(MODEL_ERRORS))


async def respond_chat(
    request: Request,
    gateway: Gateway,
    caller: Caller,
    body: ChatCompletionRequest,
    correlation_id: str,
) -> Response:
    """A chat completion as HTTP: JSON, or SSE chunks when `body.stream` (shared by the agent
    completions route)."""
    call, engine_request = await prepare_chat(gateway, caller, body, correlation_id=correlation_id)
    tier = served_tier(body)
    if body.stream:
        first, rest = await gateway.stream_chat(call, engine_request)
        return await stream_response(request, call, first, rest, tier=tier)
    return json_response(
        request, call, await complete_chat(gateway, call, body.model, engine_request, tier=tier)
    )


@router.post(
    "/chat/completions",
    response_model=None,
    responses={200: streamed(ChatCompletionResponse, "JSON, or SSE chunks")},
)
async def chat_completions(
    body: ChatCompletionRequest,
    request: Request,
    gateway: GatewayDep,
    caller: CallerDep,
    correlation: CorrelationId,
) -> Response:
    """Chat completion: plain, or streamed as server-sent events ending with `data: [DONE]`."""
    return await respond_chat(request, gateway, caller, body, correlation)


@router.post(
    "/fim/completions",
    response_model=None,
    responses={200: streamed(ChatCompletionResponse, "JSON, or SSE chunks")},
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
        first, rest = await gateway.stream_fim(call, engine_request)
        return await stream_response(request, call, first, rest)
    return json_response(
        request, call, await complete_fim(gateway, call, body.model, engine_request)
    )


@router.post(
    "/completions",
    response_model=None,
    responses={200: streamed(TextCompletionResponse, "JSON, or SSE chunks")},
)
async def text_completions(
    body: TextCompletionRequest,
    request: Request,
    gateway: GatewayDep,
    caller: CallerDep,
    correlation: CorrelationId,
) -> Response:
    """OpenAI's legacy text completion: the prompt (or each of a list) continued as plain text
    by the model's raw completion, without its chat template (fill-in-the-middle with a
    `suffix`); plain, or streamed as server-sent events ending with `data: [DONE]`. A model
    whose engine has no raw completion is a 400 naming it."""
    return await respond_text(request, gateway, caller, body, correlation)


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
    return json_response(request, call, response)
