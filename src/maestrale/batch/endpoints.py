"""The endpoints batch lines can call, by path (the reference's batch `endpoint` enum): the
capability their model needs and their executor. Executors that need only the gateway are the
domains' `gateway.executors.Endpoint`s; those that read files or store what they make (OCR,
transcription, conversations) each declare the few services they read, which a line's services
(`LineServices`) hold. A domain that adds an endpoint batch may call lists it here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from maestrale.audio.executors import run_transcription
from maestrale.classifiers.executors import (
    CHAT_CLASSIFICATIONS_ENDPOINT,
    CHAT_MODERATIONS_ENDPOINT,
    CLASSIFICATIONS_ENDPOINT,
    MODERATIONS_ENDPOINT,
)
from maestrale.completions.execute import CHAT_ENDPOINT, EMBEDDINGS_ENDPOINT, FIM_ENDPOINT
from maestrale.conversations.executors import ConversationServices, run_conversation
from maestrale.gateway.capabilities import CHAT, OCR, TRANSCRIPTION, Capability
from maestrale.gateway.executors import Endpoint, ExecutorServices
from maestrale.gateway.hooks import Caller
from maestrale.ocr.executors import run_ocr


class LineServices(ExecutorServices, ConversationServices, Protocol):
    """What batch lines read of the process's services: what every executor reads."""


# (services, caller, body, correlation_id, source, extra event fields) → response body.
LineExecutor = Callable[
    [LineServices, Caller, dict[str, Any], str, str, Mapping[str, Any]], Awaitable[dict[str, Any]]
]


@dataclass(frozen=True, slots=True)
class BatchEndpoint:
    """An endpoint batch lines may call: the capability its model needs, its executor, and
    whether a job may run it on an agent (`agent_id`) instead of a model."""

    capability: Capability[object]
    run: LineExecutor
    agents: bool = False


def _of(endpoint: Endpoint) -> BatchEndpoint:
    async def run(
        services: LineServices,
        caller: Caller,
        body: dict[str, Any],
        correlation_id: str,
        source: str,
        extra: Mapping[str, Any],
    ) -> dict[str, Any]:
        return await endpoint.run(services.gateway, caller, body, correlation_id, source, extra)

    return BatchEndpoint(endpoint.capability, run)


ENDPOINTS: Mapping[str, BatchEndpoint] = MappingProxyType(
    {
        "/v1/chat/completions": _of(CHAT_ENDPOINT),
        "/v1/fim/completions": _of(FIM_ENDPOINT),
        "/v1/embeddings": _of(EMBEDDINGS_ENDPOINT),
        "/v1/moderations": _of(MODERATIONS_ENDPOINT),
        "/v1/chat/moderations": _of(CHAT_MODERATIONS_ENDPOINT),
        "/v1/ocr": BatchEndpoint(OCR, run_ocr),
        "/v1/classifications": _of(CLASSIFICATIONS_ENDPOINT),
        "/v1/chat/classifications": _of(CHAT_CLASSIFICATIONS_ENDPOINT),
        "/v1/conversations": BatchEndpoint(CHAT, run_conversation, agents=True),
        "/v1/audio/transcriptions": BatchEndpoint(TRANSCRIPTION, run_transcription),
    }
)


def target(body: dict[str, Any], model: str | None, agent_id: str | None) -> None:
    """Point a line's body at the job's model, or at its agent (then the line's `model` goes:
    a conversation runs on one or the other)."""
    if agent_id is not None:
        body["agent_id"] = agent_id
        body.pop("model", None)
    elif model:
        body["model"] = model
        body.pop("agent_id", None)
        body.pop("agent_version", None)


async def execute(
    services: LineServices,
    caller: Caller,
    endpoint: str,
    body: dict[str, Any],
    *,
    correlation_id: str,
    source: str,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Answer one non-streamed request of `endpoint` as the live endpoint would: the response
    body, or the AppError (status and body) the endpoint would have answered."""
    return await ENDPOINTS[endpoint].run(
        services, caller, body, correlation_id, source, extra or {}
    )
