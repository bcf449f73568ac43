"""The local moderation engine on the labelled set it was calibrated on (e5 + profanity + PII).

These are sanity bars, not the figures: `bench/moderation/calibrate.py` prints in-sample and
cross-validated precision and recall. The bars catch a broken signal (a category that stops
firing, PII recall falling, clean texts flagged wholesale).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from maestrale.engines.local.e5 import E5Engine
from maestrale.engines.local.e5 import create_engine as create_e5
from maestrale.engines.local.moderation.engine import (
    LocalModerationEngine,
    example_texts,
    load_example_vectors,
)
from maestrale.engines.local.moderation.engine import create_engine as create_moderation
from maestrale.engines.moderation_types import CATEGORIES, ModerationRequest
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import EmbeddingRequest, EmbeddingResult

DATA = Path(__file__).parent / "data" / "moderation_labelled.jsonl"
# e5 on ~250 texts takes seconds on an idle machine, minutes on a loaded one: no time limit of
# the suite's default size should fail a test that measures no time.
pytestmark = pytest.mark.timeout(600)


def _labelled() -> list[tuple[str, set[str]]]:
    rows = [json.loads(line) for line in DATA.read_text("utf-8").splitlines() if line.strip()]
    return [(row["text"], set(row["categories"])) for row in rows]


def test_the_labelled_set_is_large_and_covers_every_category() -> None:
    rows = _labelled()
    assert len(rows) >= 200
    assert len({text for text, _ in rows}) == len(rows)
    for category in CATEGORIES:
        assert sum(category in labels for _, labels in rows) >= 20, category
    assert sum(not labels for _, labels in rows) >= 30


@pytest.fixture(scope="module")
async def e5() -> AsyncIterator[E5Engine]:
    engine = create_e5(ModelSpec(id="multilingual-e5-small", engine="e5"))
    yield engine
    await engine.aclose()


@pytest.fixture(scope="module")
def moderation() -> LocalModerationEngine:
    return create_moderation(
        ModelSpec(id="maestrale-moderation", engine="local_moderation", capabilities=[])
    )


async def test_precision_and_recall_are_sane(
    e5: E5Engine, moderation: LocalModerationEngine
) -> None:
    async def embed(model: str, texts: list[str]) -> EmbeddingResult:
        assert model == "multilingual-e5-small"
        return await e5.embed(EmbeddingRequest(model=model, inputs=texts))

    rows = _labelled()
    result = await moderation.moderate(
        ModerationRequest("maestrale-moderation", [text for text, _ in rows], embed)
    )
    assert len(result.results) == len(rows)
    assert result.usage.prompt_tokens > len(rows)
    for category in CATEGORIES:
        flags = [v.categories[category] for v in result.results]
        truth = [category in labels for _, labels in rows]
        tp = sum(f and t for f, t in zip(flags, truth, strict=True))
        recall = tp / sum(truth)
        precision = tp / max(sum(flags), 1)
        floor = 0.9 if category == "pii" else 0.5
        assert recall >= floor and precision >= floor, (category, precision, recall)
    clean_flagged = sum(
        any(verdict.categories.values())
        for verdict, (_, labels) in zip(result.results, rows, strict=True)
        if not labels
    )
    assert clean_flagged <= 8


def test_shipped_example_vectors_match_the_curated_examples() -> None:
    texts = example_texts()
    vectors = load_example_vectors("multilingual-e5-small", texts)
    assert vectors is not None and len(vectors) == len(texts) and len(vectors[0]) == 384
    # Another model, or edited examples, and the engine embeds them itself.
    assert load_example_vectors("another-model", texts) is None
    assert load_example_vectors("multilingual-e5-small", [*texts, "one more example"]) is None
