"""Batch executors of the four endpoints: one JSON body in, the endpoint's response body out,
validated, limited and accounted exactly as the live endpoint (see `completions.execute`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
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

ChatTexts = ChatModerationRequest | ChatClassificationRequest
Executor = Callable[
    [Gateway, Caller, dict[str, Any], str, str, Mapping[str, Any]], Awaitable[dict[str, Any]]
]
Run = Callable[..., Awaitable[tuple[Any, dict[str, Any]]]]


def _executor(schema: type[TextsRequest | ChatTexts], run: Run) -> Executor:
    """The executor of an endpoint taking `schema` and answered by `run` (`service.moderate`
    or `service.classify`)."""

    async def execute(
        gateway: Gateway, caller: Caller, body: dict[str, Any], correlation_id: str, source: str,
        extra: Mapping[str, Any],
    ) -> dict[str, Any]:  # fmt: skip
        request = parse_body(schema, body)
        texts = (
            request.inputs() if isinstance(request, TextsRequest)
            else service.conversation_texts(request.conversations())
        )  # fmt: skip
        _, response = await run(
            gateway, caller, request.model, texts, correlation_id=correlation_id, source=source
        )
        return response

    return execute


moderations = _executor(TextsRequest, service.moderate)
chat_moderations = _executor(ChatModerationRequest, service.moderate)
classifications = _executor(TextsRequest, service.classify)
chat_classifications = _executor(ChatClassificationRequest, service.classify)
