"""Applying guardrails: moderate a request's input with each configured check's model (through
the gateway, so the call is limited and accounted like any moderation call), decide per
category, and block (403) or report.

A category is flagged when its score reaches the check's custom threshold, if it has one, else
when the model flags it itself; with `ignore_other_categories` only the categories given a
threshold count. A v2 check on a model that scores the v1 categories reads `dangerous` and
`criminal` from `dangerous_and_criminal_content` (and a v1 check on a v2 model reads that one
from the larger of the two); a threshold on a category the model does not score at all is the
caller's error (400). A moderation call that fails on the server side (a 5xx: engine or upstream
failure) blocks the request with `block_on_error`, else is reported and the request goes on; a
4xx of the moderation call (unknown model, a model that does not moderate, limits) is the
caller's and is answered as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from maestrale.classifiers.service import moderate
from maestrale.core.errors import AppError, BadRequest, Forbidden
from maestrale.engines.text import content_text
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller
from maestrale.guardrails.schemas import (
    V1_CATEGORIES,
    V2_CATEGORIES,
    GuardrailConfig,
    ModerationLlmv1Config,
    ModerationLlmv2Config,
)

log = logging.getLogger("maestrale.guardrails")

# Where a category missing from a model's scores is read from instead (the largest score wins).
FALLBACKS: Mapping[str, tuple[str, ...]] = {
    "dangerous": ("dangerous_and_criminal_content",),
    "criminal": ("dangerous_and_criminal_content",),
    "dangerous_and_criminal_content": ("dangerous", "criminal"),
}


class GuardrailBlocked(Forbidden):
    code = "guardrail_blocked"


class GuardrailFailed(Forbidden):
    code = "guardrail_error"


class UnscoredCategory(BadRequest):
    code = "guardrail_category_unsupported"


class InvalidGuardrail(BadRequest):
    code = "invalid_guardrail"


@dataclass(frozen=True, slots=True)
class Check:
    """One moderation check of a guardrail configuration."""

    kind: str  # moderation_llm_v1 | moderation_llm_v2
    model: str
    categories: tuple[str, ...]
    thresholds: dict[str, float]
    ignore_other_categories: bool
    action: str  # none | block
    block_on_error: bool


@dataclass(frozen=True, slots=True)
class _Failure:
    message: str


def _config(value: GuardrailConfig | Mapping[str, Any], index: int) -> GuardrailConfig:
    if isinstance(value, GuardrailConfig):
        return value
    try:
        return GuardrailConfig.model_validate(value)
    except ValidationError as exc:  # stored before configurations were validated
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise InvalidGuardrail(
            f"guardrails[{index}] is invalid: {where}: {first.get('msg')}", param="guardrails"
        ) from exc


def checks_of(configs: Sequence[GuardrailConfig | Mapping[str, Any]]) -> list[Check]:
    checks = []
    for index, value in enumerate(configs):
        config = _config(value, index)
        parts: list[tuple[str, ModerationLlmv1Config | ModerationLlmv2Config | None]] = [
            ("moderation_llm_v1", config.moderation_llm_v1),
            ("moderation_llm_v2", config.moderation_llm_v2),
        ]
        for kind, part in parts:
            if part is None:
                continue
            checks.append(
                Check(
                    kind=kind,
                    model=part.model_name,
                    categories=V1_CATEGORIES if kind == "moderation_llm_v1" else V2_CATEGORIES,
                    thresholds=part.thresholds(),
                    ignore_other_categories=part.ignore_other_categories,
                    action=part.action or "block",
                    block_on_error=config.block_on_error,
                )
            )
    return checks


def input_text(messages: Sequence[Any]) -> str:
    """The text a guardrail moderates: the messages' text, one message per line (as
    /v1/chat/moderations scores a conversation). Messages are `Message` models or dicts."""
    lines = []
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else message.content
        lines.append(content_text(content))
    return "\n".join(lines)


def _score(verdict: Mapping[str, Any], category: str) -> tuple[float, bool] | None:
    scores: Mapping[str, float] = verdict.get("category_scores") or {}
    flags: Mapping[str, bool] = verdict.get("categories") or {}
    if category in scores:
        return float(scores[category]), bool(flags.get(category))
    sources = [name for name in FALLBACKS.get(category, ()) if name in scores]
    if not sources:
        return None
    return max(float(scores[s]) for s in sources), any(bool(flags.get(s)) for s in sources)


def evaluate(check: Check, verdict: Mapping[str, Any]) -> dict[str, Any]:
    """The result of `check` on the model's verdict (400 for a threshold on a category the model
    does not score)."""
    scores: dict[str, float] = {}
    flagged: list[str] = []
    for category in check.categories:
        threshold = check.thresholds.get(category)
        got = _score(verdict, category)
        if got is None:
            if threshold is not None:
                raise UnscoredCategory(
                    f"guardrail {check.kind}: model {check.model!r} does not score category "
                    f"{category!r}; remove its threshold from custom_category_thresholds",
                    param="guardrails",
                )
            continue
        score, model_flag = got
        scores[category] = score
        if threshold is not None:
            hit = score >= threshold
        else:
            hit = model_flag and not check.ignore_other_categories
        if hit:
            flagged.append(category)
    return _result(check, flagged=flagged, scores=scores, error=None)


def _result(
    check: Check, *, flagged: list[str], scores: dict[str, float], error: str | None
) -> dict[str, Any]:
    return {
        "guardrail": check.kind,
        "model": check.model,
        "action": check.action,
        "blocked": bool(flagged) and check.action == "block",
        "flagged_categories": flagged,
        "category_scores": scores,
        "error": error,
    }


async def _moderate(
    gateway: Gateway, caller: Caller, model: str, text: str, correlation_id: str, source: str
) -> Mapping[str, Any] | _Failure:
    """The model's verdict on `text`, or the server-side failure of the call."""
    try:
        _, body = await moderate(
            gateway, caller, model, [text], correlation_id=correlation_id, source=source
        )
    except AppError as exc:
        if exc.status_code < 500:
            raise
        log.warning("guardrail moderation with %s failed: %s", model, exc.message)
        return _Failure(exc.message)
    except Exception:
        log.exception("guardrail moderation with %s failed", model)
        return _Failure("the moderation model failed")
    verdict: Mapping[str, Any] = body["results"][0]
    return verdict


async def apply_guardrails(
    gateway: Gateway,
    caller: Caller,
    configs: Sequence[GuardrailConfig | Mapping[str, Any]] | None,
    messages: Sequence[Any],
    *,
    correlation_id: str,
    source: str = "api",
) -> list[dict[str, Any]]:
    """Check `messages` against every guardrail of `configs`: 403 `guardrail_blocked` when a
    blocking check flags a category, 403 `guardrail_error` when the moderation of a check with
    `block_on_error` fails; otherwise one result per check (empty without guardrails or
    without messages: no new input, nothing to check)."""
    checks = checks_of(configs or ())
    if not checks or not messages:
        return []
    text = input_text(messages)
    verdicts: dict[str, Mapping[str, Any] | _Failure] = {}
    results = []
    for check in checks:
        if check.model not in verdicts:  # one moderation call per model
            verdicts[check.model] = await _moderate(
                gateway, caller, check.model, text, correlation_id, source
            )
        verdict = verdicts[check.model]
        if isinstance(verdict, _Failure):
            if check.block_on_error:
                raise GuardrailFailed(
                    f"the request was blocked: guardrail {check.kind} could not moderate it with "
                    f"model {check.model!r} ({verdict.message}) and has block_on_error",
                    param="guardrails",
                )
            results.append(_result(check, flagged=[], scores={}, error=verdict.message))
            continue
        result = evaluate(check, verdict)
        if result["blocked"]:
            raise GuardrailBlocked(
                f"the request was blocked by guardrail {check.kind} (model {check.model!r}): "
                f"flagged {', '.join(result['flagged_categories'])}",
                param="guardrails",
            )
        results.append(result)
    return results
