"""The platform's own calls to models (a judge's verdict, the embeddings of similar events): run
as a client's request would run, with the same validation, guardrails, limits and accounting.

The completions domain implements it (`completions.platform_calls`) and the composition root
hands it to the features that call models, so that they need not know the completions domain."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from maestrale.core.uow import Release
from maestrale.gateway.hooks import Caller


class PlatformCalls(Protocol):
    def releasing(self, release: Release) -> PlatformCalls:
        """These calls for the owner of a unit of work, whose transaction each call ends first
        (`Gateway.releasing`)."""
        ...

    async def chat(
        self, caller: Caller, body: Mapping[str, Any], *, correlation_id: str, source: str
    ) -> dict[str, Any]:
        """The chat completion body (`/v1/chat/completions`' response) of the request `body`.
        A body that is no valid chat request raises `pydantic.ValidationError`; an unknown
        model `NotFound`."""
        ...

    async def embeddings(
        self, caller: Caller, body: Mapping[str, Any], *, correlation_id: str, source: str
    ) -> dict[str, Any]:
        """The embeddings body (`/v1/embeddings`' response) of the request `body`; errors as
        for `chat`."""
        ...
