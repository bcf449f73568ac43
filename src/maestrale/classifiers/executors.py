"""Batch executors of the four endpoints: one JSON body in, the endpoint's response body out,
validated, limited and accounted exactly as the live endpoint (see `completions.execute`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maestrale.classifiers import service
from maestrale.classifiers.schemas import (
    ChatClassificationRequest,
    ChatModerationRequest,
    TextsRequest,
)
from maestrale.completions.gateway import Gateway
from maestrale.completions.hooks import Caller
from maestrale.core.validation import parse_body


async def moderations(
    gateway: Gateway, caller: Caller, body: dict[str, Any], correlation_id: str, source: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:  # fmt: skip
    request: TextsRequest = parse_body(TextsRequest, body)
    _, response = await service.moderate(
        gateway, caller, request.model, request.inputs(),
        correlation_id=correlation_id, source=source,
    )  # fmt: skip
    return response


async def chat_moderations(
    gateway: Gateway, caller: Caller, body: dict[str, Any], correlation_id: str, source: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:  # fmt: skip
    request: ChatModerationRequest = parse_body(ChatModerationRequest, body)
    texts = service.conversation_texts(request.conversations())
    _, response = await service.moderate(
        gateway, caller, request.model, texts, correlation_id=correlation_id, source=source
    )
    return response


async def classifications(
    gateway: Gateway, caller: Caller, body: dict[str, Any], correlation_id: str, source: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:  # fmt: skip
    request: TextsRequest = parse_body(TextsRequest, body)
    _, response = await service.classify(
        gateway, caller, request.model, request.inputs(),
        correlation_id=correlation_id, source=source,
    )  # fmt: skip
    return response


async def chat_classifications(
    gateway: Gateway, caller: Caller, body: dict[str, Any], correlation_id: str, source: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:  # fmt: skip
    request: ChatClassificationRequest = parse_body(ChatClassificationRequest, body)
    texts = service.conversation_texts(request.conversations())
    _, response = await service.classify(
        gateway, caller, request.model, texts, correlation_id=correlation_id, source=source
    )
    return response
