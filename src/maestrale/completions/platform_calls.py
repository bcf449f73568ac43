"""`gateway.platform_calls.PlatformCalls` on the completions domain: the platform's own chat and
embeddings calls take the path of `/v1/chat/completions` and `/v1/embeddings`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maestrale.completions.execute import complete_chat, prepare_chat, run_embeddings
from maestrale.completions.schemas import ChatCompletionRequest, EmbeddingRequest
from maestrale.core.uow import Release
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller


class CompletionCalls:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    def releasing(self, release: Release) -> CompletionCalls:
        return CompletionCalls(self.gateway.releasing(release))

    async def chat(
        self, caller: Caller, body: Mapping[str, Any], *, correlation_id: str, source: str
    ) -> dict[str, Any]:
        request = ChatCompletionRequest.model_validate(body)
        call, engine_request = await prepare_chat(
            self.gateway, caller, request, correlation_id=correlation_id, source=source
        )
        return await complete_chat(self.gateway, call, request.model, engine_request)

    async def embeddings(
        self, caller: Caller, body: Mapping[str, Any], *, correlation_id: str, source: str
    ) -> dict[str, Any]:
        request = EmbeddingRequest.model_validate(body)
        _, response = await run_embeddings(
            self.gateway, caller, request, correlation_id=correlation_id, source=source
        )
        return response
