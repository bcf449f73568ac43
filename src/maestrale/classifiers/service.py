"""Moderation and classification calls: validate the inputs, open the call on the gateway
(model, capability, limits), run the engine with an embedder over the registry, account, and
shape the response body."""

from __future__ import annotations

import uuid
from typing import Any

from maestrale.classifiers.embedder import registry_embedder
from maestrale.completions.gateway import Call, Gateway
from maestrale.completions.hooks import Caller
from maestrale.completions.schemas import Message
from maestrale.completions.validation import CHARS_PER_TOKEN
from maestrale.core.errors import AppError, BadRequest
from maestrale.engines.moderation_types import (
    ClassificationRequest,
    ClassificationResult,
    ModerationRequest,
    ModerationResult,
)
from maestrale.engines.text import content_text

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


def _artifact(call: Call) -> str | None:
    # A fine-tuned classifier resolves to its base model's engine; its artifact is `upstream`.
    return call.upstream if call.model.startswith("ft:") else None


async def _admitted(
    gateway: Gateway, caller: Caller, model: str, endpoint: str, texts: list[str],
    correlation_id: str, source: str,
) -> Call:  # fmt: skip
    """The call of `endpoint` on `texts`, checked, opened and admitted."""
    check_texts(texts)
    call = await gateway.open(caller, model, endpoint, correlation_id=correlation_id, source=source)
    await gateway.admit(call, _estimate(texts))
    return call


async def moderate(
    gateway: Gateway, caller: Caller, model: str, texts: list[str], *, correlation_id: str,
    source: str = "api",
) -> tuple[Call, dict[str, Any]]:  # fmt: skip
    """Moderate `texts` with `model`: the call and the ModerationResponse body."""
    call = await _admitted(gateway, caller, model, "moderations", texts, correlation_id, source)
    request = ModerationRequest(call.upstream, texts, registry_embedder(gateway.registry))
    result: ModerationResult = await gateway.invoke(call, call.engine.moderate(request), None, None)
    await gateway.finish(call, None, None, None, result.usage, 200)
    return call, {
        "id": uuid.uuid4().hex,
        "model": model,
        "results": [
            {"categories": v.categories, "category_scores": v.category_scores}
            for v in result.results
        ],
    }


async def classify(
    gateway: Gateway, caller: Caller, model: str, texts: list[str], *, correlation_id: str,
    source: str = "api",
) -> tuple[Call, dict[str, Any]]:  # fmt: skip
    """Classify `texts` with `model`: the call and the ClassificationResponse body."""
    call = await _admitted(gateway, caller, model, "classifications", texts, correlation_id, source)
    request = ClassificationRequest(
        call.upstream, texts, registry_embedder(gateway.registry), _artifact(call)
    )
    result: ClassificationResult = await gateway.invoke(
        call, call.engine.classify(request), None, None
    )
    await gateway.finish(call, None, None, None, result.usage, 200)
    return call, {
        "id": uuid.uuid4().hex,
        "model": model,
        "results": [
            {target: {"scores": scores} for target, scores in item.items()}
            for item in result.results
        ],
    }
