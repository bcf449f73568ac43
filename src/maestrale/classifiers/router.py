"""POST /v1/moderations, /v1/chat/moderations, /v1/classifications, /v1/chat/classifications."""

from __future__ import annotations

from fastapi import Request, Response

from maestrale.classifiers import service
from maestrale.classifiers.schemas import (
    ChatClassificationRequest,
    ChatModerationRequest,
    ClassificationResponse,
    ModerationResponse,
    TextsRequest,
)
from maestrale.core.errors import MODEL_ERRORS, error_responses
from maestrale.core.routing import domain_router
from maestrale.gateway.dependencies import CallerDep, CorrelationId, GatewayDep
from maestrale.gateway.responses import json_response

router = domain_router(tags=["classifiers"], responses=error_responses(MODEL_ERRORS))


@router.post("/moderations", response_model=None, responses={200: {"model": ModerationResponse}})
async def moderations(
    body: TextsRequest,
    request: Request,
    gateway: GatewayDep,
    caller: CallerDep,
    correlation: CorrelationId,
) -> Response:
    """Moderate one text or a list of texts: per input, a boolean and a score for each of the
    nine categories (sexual, hate_and_discrimination, violence_and_threats,
    dangerous_and_criminal_content, selfharm, health, financial, law, pii)."""
    call, body_out = await service.moderate(
        gateway, caller, body.model, body.inputs(), correlation_id=correlation
    )
    return json_response(request, call, body_out)


@router.post(
    "/chat/moderations", response_model=None, responses={200: {"model": ModerationResponse}}
)
async def chat_moderations(
    body: ChatModerationRequest,
    request: Request,
    gateway: GatewayDep,
    caller: CallerDep,
    correlation: CorrelationId,
) -> Response:
    """Moderate one conversation or a list of conversations, each as a whole."""
    texts = service.conversation_texts(body.conversations())
    call, body_out = await service.moderate(
        gateway, caller, body.model, texts, correlation_id=correlation
    )
    return json_response(request, call, body_out)


@router.post(
    "/classifications", response_model=None, responses={200: {"model": ClassificationResponse}}
)
async def classifications(
    body: TextsRequest,
    request: Request,
    gateway: GatewayDep,
    caller: CallerDep,
    correlation: CorrelationId,
) -> Response:
    """Classify one text or a list of texts with a classifier model: per input, for each
    target of the classifier, the probability of each of its labels."""
    call, body_out = await service.classify(
        gateway, caller, body.model, body.inputs(), correlation_id=correlation
    )
    return json_response(request, call, body_out)


@router.post(
    "/chat/classifications",
    response_model=None,
    responses={200: {"model": ClassificationResponse}},
)
async def chat_classifications(
    body: ChatClassificationRequest,
    request: Request,
    gateway: GatewayDep,
    caller: CallerDep,
    correlation: CorrelationId,
) -> Response:
    """Classify one `{messages}` conversation or a list of them, each as a whole."""
    texts = service.conversation_texts(body.conversations())
    call, body_out = await service.classify(
        gateway, caller, body.model, texts, correlation_id=correlation
    )
    return json_response(request, call, body_out)
