"""The local moderation engine: offensive-language model + PII recognisers + embedding similarity.

For each category the engine computes a raw score from up to three signals, weighted and cut by
a threshold fitted on labelled texts (`bench/moderation/calibrate.py` writes `thresholds.json`;
the data set, the method and the held-out figures are in docs/guides/moderation.md):

- `similarity`: contrasted similarity to the curated examples of the category (`categories.py`),
  with the embeddings of the catalog model `options.embeddings_model` (multilingual-e5-small);
- `profanity`: alt-profanity-check's probability that the text is offensive, weighted per
  category (the calibration decides where it helps: insults, slurs, obscenities);
- `pii`: the most certain PII finding (patterns with checksums; named entities with spaCy).

raw = similarity + profanity_weight * profanity + pii_weight * pii, and the category score is
sigmoid((raw - threshold) / scale), so that a score ≥ 0.5 is exactly "flagged". The scores are
therefore ranked and calibrated around the threshold, not probabilities.

Catalog options (`[models.options]`), all optional:
- `embeddings_model`: the catalog id of the embeddings model (default "multilingual-e5-small").
- `spacy_model`: a spaCy pipeline name for PERSON / location entities (none by default).
- `thresholds`: a path to a thresholds file replacing the packaged one.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from pydantic import BaseModel, ConfigDict, Field

from maestrale.engines.local import engine_options
from maestrale.engines.local.moderation.categories import CLEAN, EXAMPLES
from maestrale.engines.local.moderation.pii import PiiDetector
from maestrale.engines.local.moderation.profanity import ProfanityModel
from maestrale.engines.local.moderation.similarity import ExampleIndex
from maestrale.engines.moderation_types import (
    CATEGORIES,
    Embedder,
    ModerationRequest,
    ModerationResult,
    ModerationVerdict,
)
from maestrale.engines.specs import CatalogError, ModelSpec
from maestrale.engines.types import EngineError

# The extra must be installed for the engine to be offered at all (checked without importing
# the model, which takes most of a second).
if importlib.util.find_spec("profanity_check") is None:  # pragma: no cover - extra missing
    raise ImportError("alt-profanity-check is not installed")

THRESHOLDS_FILE = Path(__file__).with_name("thresholds.json")
EXAMPLE_VECTORS_FILE = Path(__file__).with_name("example_vectors.npz")
FEATURES = ("similarity", "profanity", "pii")


def example_texts() -> list[str]:
    """The curated texts, in the order of the vectors file: each category's, then the clean."""
    return [text for name in EXAMPLES for text in EXAMPLES[name]] + list(CLEAN)


def _digest(model: str, texts: list[str]) -> str:
    return hashlib.sha256("\n".join([model, *texts]).encode()).hexdigest()


def load_example_vectors(model: str, texts: list[str]) -> list[list[float]] | None:
    """The curated texts' vectors from `EXAMPLE_VECTORS_FILE` when it was written for exactly
    this embeddings model and these texts (else None: they are embedded at the first request).
    Shipping them saves embedding ~140 texts whenever an engine starts."""
    try:
        with np.load(EXAMPLE_VECTORS_FILE) as data:
            if str(data["digest"]) != _digest(model, texts):
                return None
            vectors: list[list[float]] = data["vectors"].astype(np.float32).tolist()
    except (OSError, KeyError, ValueError):
        return None
    return vectors if len(vectors) == len(texts) else None


def save_example_vectors(model: str, texts: list[str], vectors: Sequence[Sequence[float]]) -> None:
    """Write the vectors file (the calibration script does, after embedding the texts)."""
    np.savez_compressed(
        EXAMPLE_VECTORS_FILE,
        digest=np.asarray(_digest(model, texts)),
        vectors=np.asarray(vectors, dtype=np.float16),
    )


def _check_count(vectors: Sequence[Sequence[float]], texts: Sequence[str]) -> None:
    # An engine stopped mid-way (shutdown) may hand back fewer vectors than texts.
    if len(vectors) != len(texts):
        raise EngineError(
            503, "the embeddings model returned too few vectors", code="engine_unavailable"
        )


async def _embed_all(embed: Embedder, model: str, texts: list[str]) -> list[list[float]]:
    vectors = (await embed(model, texts)).vectors
    _check_count(vectors, texts)
    return vectors


class ModerationOptions(BaseModel):
    """`options` of a `local_moderation` catalog entry."""

    model_config = ConfigDict(extra="forbid")

    embeddings_model: str = Field(default="multilingual-e5-small", min_length=1)
    spacy_model: str | None = None
    thresholds: str | None = None


@dataclass(frozen=True, slots=True)
class Calibration:
    """How one category's raw score is made and cut (see the module docstring)."""

    threshold: float
    scale: float = 0.02
    profanity_weight: float = 0.0
    pii_weight: float = 0.0

    def raw(self, features: dict[str, float]) -> float:
        return (
            features["similarity"]
            + self.profanity_weight * features["profanity"]
            + self.pii_weight * features["pii"]
        )

    def score(self, features: dict[str, float]) -> float:
        z = (self.raw(features) - self.threshold) / self.scale
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))


def load_calibrations(path: Path) -> dict[str, Calibration]:
    """The calibration of every category from a thresholds file (`CatalogError` if invalid)."""
    try:
        data = orjson.loads(path.read_bytes())
        entries: dict[str, Any] = data["categories"]
        return {name: Calibration(**entries[name]) for name in CATEGORIES}
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise CatalogError(f"invalid moderation thresholds file {path}: {exc!r}") from exc


class LocalModerationEngine:
    """Moderation in process; the heavy steps run off the event loop (embeddings on the e5
    engine's worker thread, the rest in `asyncio.to_thread`)."""

    def __init__(self, options: ModerationOptions, calibrations: dict[str, Calibration]) -> None:
        self.embeddings_model = options.embeddings_model
        self.calibrations = calibrations
        self._pii = PiiDetector(options.spacy_model)
        self._profanity = ProfanityModel()
        self._index: ExampleIndex | None = None

    async def _example_index(self, embed: Embedder) -> ExampleIndex:
        # Computed once; two first requests racing both compute it, which is harmless.
        if self._index is None:
            texts = example_texts()
            vectors = await asyncio.to_thread(load_example_vectors, self.embeddings_model, texts)
            if vectors is None:
                vectors = await _embed_all(embed, self.embeddings_model, texts)
            by_category: dict[str, list[list[float]]] = {}
            offset = 0
            for name in EXAMPLES:
                count = len(EXAMPLES[name])
                by_category[name] = vectors[offset : offset + count]
                offset += count
            self._index = ExampleIndex(by_category, vectors[offset:])
        return self._index

    async def features(
        self, texts: list[str], embed: Embedder
    ) -> tuple[list[dict[str, dict[str, float]]], int]:
        """Per text and category, the raw signals (`FEATURES`); and the tokens embedded."""
        index = await self._example_index(embed)
        embedded = await embed(self.embeddings_model, texts)
        _check_count(embedded.vectors, texts)
        features = await asyncio.to_thread(self._features, texts, embedded.vectors, index)
        return features, embedded.usage.prompt_tokens

    def _features(
        self, texts: list[str], vectors: Sequence[Sequence[float]], index: ExampleIndex
    ) -> list[dict[str, dict[str, float]]]:
        similarity = index.raw_scores(vectors)
        profanity = self._profanity.scores(texts)
        pii = [self._pii.score(text) for text in texts]
        return [
            {
                name: {
                    "similarity": similarity[name][i] if name in similarity else 0.0,
                    "profanity": profanity[i],
                    "pii": pii[i],
                }
                for name in CATEGORIES
            }
            for i in range(len(texts))
        ]

    def verdict(self, features: dict[str, dict[str, float]]) -> ModerationVerdict:
        scores = {
            name: round(self.calibrations[name].score(features[name]), 6) for name in CATEGORIES
        }
        return ModerationVerdict(
            categories={name: score >= 0.5 for name, score in scores.items()},
            category_scores=scores,
        )

    async def moderate(self, request: ModerationRequest) -> ModerationResult:
        """Score every input over the nine categories (see the module docstring)."""
        if request.embed is None:
            raise EngineError(500, "the moderation engine needs an embedder", code="engine_error")
        features, tokens = await self.features(list(request.inputs), request.embed)
        result = ModerationResult([self.verdict(f) for f in features])
        result.usage.prompt_tokens = tokens
        return result


def create_engine(spec: ModelSpec) -> LocalModerationEngine:
    """Factory of the engine registry: check the options and the thresholds file."""
    options = engine_options(ModerationOptions, spec)
    path = Path(options.thresholds) if options.thresholds else THRESHOLDS_FILE
    return LocalModerationEngine(options, load_calibrations(path))
