"""The `openai_compat_moderation` engine: moderation and classification by an upstream that
serves the platform's `POST /moderations` and `POST /classifications` (the Mistral platform,
or another Maestrale).

Texts go up as they came, with the model renamed to `upstream_model`; chat inputs arrive here
already flattened to one text per conversation (so the upstream's text endpoints are used).
The answers must be platform-shaped (`results` of `categories`/`category_scores`, or of
`{target: {scores}}`); categories are kept as the upstream names them, scores clamped to
numbers. Catalog entry: `engine = "openai_compat_moderation"`, `base_url` (ending in `/v1`),
`upstream_model`, `api_key_env`, `capabilities = ["moderation"]` or `["classification"]`, and
the `options` of the `openai_compat` engine.
"""

from __future__ import annotations

from typing import Any

from maestrale.engines.moderation_types import (
    ClassificationRequest,
    ClassificationResult,
    ModerationRequest,
    ModerationResult,
    ModerationVerdict,
)
from maestrale.engines.openai_compat.client import UpstreamClient
from maestrale.engines.openai_compat.options import UpstreamConfig, config_from_spec
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import EngineError, Usage

__all__ = ["UpstreamModerationEngine", "create_engine"]


def _invalid(what: str) -> EngineError:
    return EngineError(502, f"the upstream's answer is invalid: {what}", code="upstream_error")


def _results(answer: Any, expected: int) -> list[Any]:
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list) or len(results) != expected:
        raise _invalid(f"expected `results` with {expected} items")
    return results


def _usage(answer: dict[str, Any]) -> Usage:
    usage = answer.get("usage")
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return Usage(prompt_tokens=tokens if isinstance(tokens, int) else 0)


def _scores(value: Any, what: str) -> dict[str, float]:
    if not isinstance(value, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in value.values()
    ):
        raise _invalid(f"{what} must map names to numbers")
    return {str(k): float(v) for k, v in value.items()}


class UpstreamModerationEngine:
    """Forwards moderation and classification to the upstream over one pooled HTTP client."""

    def __init__(self, config: UpstreamConfig, upstream_model: str) -> None:
        self._client = UpstreamClient(config)
        self._model = upstream_model

    async def moderate(self, request: ModerationRequest) -> ModerationResult:
        """POST the texts to `/moderations`; one verdict per text, in order."""
        body = {"model": self._model, "input": list(request.inputs)}
        answer = await self._client.post_json("/moderations", body)
        verdicts = []
        for item in _results(answer, len(request.inputs)):
            if not isinstance(item, dict) or not isinstance(item.get("categories"), dict):
                raise _invalid("a result without `categories`")
            categories = {str(k): bool(v) for k, v in item["categories"].items()}
            scores = _scores(item.get("category_scores", {}), "category_scores")
            verdicts.append(ModerationVerdict(categories, scores))
        return ModerationResult(verdicts, _usage(answer))

    async def classify(self, request: ClassificationRequest) -> ClassificationResult:
        """POST the texts to `/classifications`; per text, {target: {label: score}}."""
        body = {"model": self._model, "input": list(request.inputs)}
        answer = await self._client.post_json("/classifications", body)
        results = []
        for item in _results(answer, len(request.inputs)):
            if not isinstance(item, dict):
                raise _invalid("a result that is not an object")
            targets = {}
            for target, value in item.items():
                scores = value.get("scores") if isinstance(value, dict) else None
                targets[str(target)] = _scores(scores, f"target {target!r} scores")
            results.append(targets)
        return ClassificationResult(results, _usage(answer))

    async def aclose(self) -> None:
        await self._client.aclose()


def create_engine(spec: ModelSpec) -> UpstreamModerationEngine:
    """Factory of the engine registry (`CatalogError` without `base_url`)."""
    return UpstreamModerationEngine(config_from_spec(spec), spec.upstream_model or spec.id)
