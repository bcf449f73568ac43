"""Moderation and classification calls: validate the inputs, open the call on the gateway
(model, capability, limits), run the engine with an embedder over the registry (the gateway
accounts for the call), and shape the response body."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from maestrale.catalog.artifacts import ArtifactFormat
from maestrale.classifiers.embedder import registry_embedder
from maestrale.core.errors import AppError, BadRequest
from maestrale.engines.moderation_types import ClassificationRequest, ModerationRequest
from maestrale.engines.protocols import ClassificationEngine, ModerationEngine
from maestrale.engines.text import content_text
from maestrale.gateway.call import Call, usage_report
from maestrale.gateway.capabilities import CLASSIFICATIONS, MODERATIONS, Capability
from maestrale.gateway.estimates import CHARS_PER_TOKEN
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller
from maestrale.gateway.messages import Message

E = TypeVar("E")

MAX_INPUTS = 512
MAX_TOTAL_CHARS = 2_000_000


class InvalidInput(BadRequest):
    code = "invalid_request"


class InputTooLarge(AppError):
    status_code = 413
    code = "input_too_large"


def check_texts(texts: list[str]) -> list[str]:
    """400 for no input or too many inputs, 413 for too much text in all."""
    if not texts:
        raise InvalidInput("input must not be empty", param="input")
    if len(texts) > MAX_INPUTS:
        raise InvalidInput(
            f"too many inputs: {len(texts)} (at most {MAX_INPUTS} per request)", param="input"
        )
    total = sum(map(len, texts))
    if total > MAX_TOTAL_CHARS:
        raise InputTooLarge(
            f"input too large: {total} characters (at most {MAX_TOTAL_CHARS} per request)",
            param="input",
        )
    return texts


def conversation_texts(conversations: list[list[Message]]) -> list[str]:
    """One text per conversation: its messages' text, one message per line, in order.

    The whole conversation is scored, so that a harmful request split over turns (or answered
    by the assistant) is seen in context.
    """
    texts = []
    for i, messages in enumerate(conversations):
        if not messages:
            raise InvalidInput(f"input[{i}]: a conversation needs messages", param="input")
        texts.append("\n".join(content_text(m.content) for m in messages))
    return texts


def _estimate(texts: list[str]) -> int:
    return sum(map(len, texts)) // CHARS_PER_TOKEN + len(texts)


def _artifact(call: Call[ClassificationEngine]) -> str | None:
    # A fine-tuned classifier resolves to its base model's engine, given its own head.
    return call.artifact_file(ArtifactFormat.CLASSIFIER)


async def _admitted(
    gateway: Gateway,
    caller: Caller,
    model: str,
    capability: Capability[E],
    texts: list[str],
    correlation_id: str,
    source: str,
) -> Call[E]:
    """The call of `capability` on `texts`, checked, opened and admitted."""
    check_texts(texts)
    call = await gateway.open(
        caller, model, capability, correlation_id=correlation_id, source=source
    )
    await gateway.admit(call, _estimate(texts))
    return call


async def moderate(
    gateway: Gateway,
    caller: Caller,
    model: str,
    texts: list[str],
    *,
    correlation_id: str,
    source: str = "api",
) -> tuple[Call[ModerationEngine], dict[str, Any]]:
    """Moderate `texts` with `model`: the call and the ModerationResponse body."""
    call = await _admitted(gateway, caller, model, MODERATIONS, texts, correlation_id, source)
    request = ModerationRequest(call.upstream, texts, registry_embedder(gateway.registry))
    result = await gateway.run(call, lambda engine: engine.moderate(request), usage_report)
    return call, {
        "id": uuid.uuid4().hex,
        "model": model,
        "results": [
            {"categories": v.categories, "category_scores": v.category_scores}
            for v in result.results
        ],
    }


async def classify(
    gateway: Gateway,
    caller: Caller,
    model: str,
    texts: list[str],
    *,
    correlation_id: str,
    source: str = "api",
) -> tuple[Call[ClassificationEngine], dict[str, Any]]:
    """Classify `texts` with `model`: the call and the ClassificationResponse body."""
    call = await _admitted(gateway, caller, model, CLASSIFICATIONS, texts, correlation_id, source)
    request = ClassificationRequest(
        call.upstream, texts, registry_embedder(gateway.registry), _artifact(call)
    )
    result = await gateway.run(call, lambda engine: engine.classify(request), usage_report)
    return call, {
        "id": uuid.uuid4().hex,
        "model": model,
        "results": [
            {target: {"scores": scores} for target, scores in item.items()}
            for item in result.results
        ],
    }
