"""Batch executors of the four endpoints: one JSON body in, the endpoint's response body out,
validated, limited and accounted exactly as the live endpoint (see `gateway.executors`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from maestrale.classifiers import service
from maestrale.classifiers.schemas import (
    ChatClassificationRequest,
    ChatModerationRequest,
    TextsRequest,
)
from maestrale.core.validation import parse_body
from maestrale.gateway.capabilities import CLASSIFICATIONS, MODERATIONS
from maestrale.gateway.executors import Endpoint, Executor
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller

ChatTexts = ChatModerationRequest | ChatClassificationRequest
Run = Callable[..., Awaitable[tuple[Any, dict[str, Any]]]]


def _executor(schema: type[TextsRequest | ChatTexts], run: Run) -> Executor:
    """The executor of an endpoint taking `schema` and answered by `run` (`service.moderate`
    or `service.classify`)."""

    async def execute(
        gateway: Gateway,
        caller: Caller,
        body: dict[str, Any],
        correlation_id: str,
        source: str,
        extra: Mapping[str, Any],
    ) -> dict[str, Any]:
        request = parse_body(schema, body)
        texts = (
            request.inputs()
            if isinstance(request, TextsRequest)
            else service.conversation_texts(request.conversations())
        )
        _, response = await run(
            gateway, caller, request.model, texts, correlation_id=correlation_id, source=source
        )
        return response

    return execute


MODERATIONS_ENDPOINT = Endpoint(MODERATIONS, _executor(TextsRequest, service.moderate))
CHAT_MODERATIONS_ENDPOINT = Endpoint(
    MODERATIONS, _executor(ChatModerationRequest, service.moderate)
)
CLASSIFICATIONS_ENDPOINT = Endpoint(CLASSIFICATIONS, _executor(TextsRequest, service.classify))
CHAT_CLASSIFICATIONS_ENDPOINT = Endpoint(
    CLASSIFICATIONS, _executor(ChatClassificationRequest, service.classify)
)
