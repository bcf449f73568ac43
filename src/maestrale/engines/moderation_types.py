"""Engine-level request and result types of moderation and classification.

Both kinds of engine may need embeddings of another catalog model (the local moderation engine
compares texts with curated category examples; a classifier is an embeddings model plus a linear
head). They do not reach into the engine registry themselves: the caller hands them an `Embedder`
that embeds texts with a model named by catalog id, so that the weights loaded for
`/v1/embeddings` are shared and the engines stay testable on their own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from maestrale.engines.types import EmbeddingResult, Usage

# The moderation categories of the platform, in the order of the spec.
CATEGORIES: tuple[str, ...] = (
    "sexual",
    "hate_and_discrimination",
    "violence_and_threats",
    "dangerous_and_criminal_content",
    "selfharm",
    "health",
    "financial",
    "law",
    "pii",
)

# Embed `texts` with the catalog model named first; vectors in input order. Raises `EngineError`.
Embedder = Callable[[str, list[str]], Awaitable[EmbeddingResult]]


@dataclass(slots=True)
class ModerationRequest:
    model: str
    inputs: list[str]
    embed: Embedder | None = None


@dataclass(slots=True)
class ModerationVerdict:
    """One input's verdict: a boolean and a score in [0, 1] for each of `CATEGORIES`."""

    categories: dict[str, bool]
    category_scores: dict[str, float]


@dataclass(slots=True)
class ModerationResult:
    results: list[ModerationVerdict]
    usage: Usage = field(default_factory=Usage)


@dataclass(slots=True)
class ClassificationRequest:
    """`artifact` overrides the engine's own head (a fine-tuned model's artifact path)."""

    model: str
    inputs: list[str]
    embed: Embedder | None = None
    artifact: str | None = None


@dataclass(slots=True)
class ClassificationResult:
    """Per input: {target name: {label: probability}} (each target's scores sum to 1)."""

    results: list[dict[str, dict[str, float]]]
    usage: Usage = field(default_factory=Usage)
