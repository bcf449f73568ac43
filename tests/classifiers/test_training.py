"""Training a classifier head from the platform's labelled JSONL format, and its artifact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from maestrale.classifiers.embedder import registry_embedder
from maestrale.classifiers.training import TrainingDataError, read_examples, train_classifier
from maestrale.engines.builtin.embeddings import embed as builtin_embed
from maestrale.engines.local.classifier_artifact import ArtifactError, load_artifact
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import load_catalog
from maestrale.engines.types import EmbeddingRequest, EmbeddingResult, EngineError

DATA = Path(__file__).parent / "data" / "classifier_train.jsonl"


async def _embed(model: str, texts: list[str]) -> EmbeddingResult:
    assert model == "maestrale-embed"
    return builtin_embed(EmbeddingRequest(model=model, inputs=texts))


async def test_train_save_load_predict(tmp_path: Path) -> None:
    out = tmp_path / "clf.json"
    artifact = await train_classifier(
        DATA, embed=_embed, embeddings_model="maestrale-embed", out=out
    )
    loaded = load_artifact(out)
    assert loaded.embeddings_model == "maestrale-embed"
    assert {h.name: h.labels for h in loaded.targets} == {
        "sentiment": ["negative", "positive"],
        "topic": ["cooking", "sports", "technology"],
    }
    assert artifact.metadata["examples"] == 40
    texts = [text for text, _ in read_examples(DATA)]
    vectors = (await _embed("maestrale-embed", texts)).vectors
    predictions = loaded.predict(vectors)
    truth = [labels for _, labels in read_examples(DATA)]
    for target in ("sentiment", "topic"):
        right = sum(
            max(pred[target], key=pred[target].__getitem__) == labels[target][0]
            for pred, labels in zip(predictions, truth, strict=True)
        )
        assert right >= 36, (target, right)  # a linear head fits its own training set
    for pred in predictions:
        for scores in pred.values():
            assert sum(scores.values()) == pytest.approx(1.0, abs=1e-4)


async def test_train_from_messages_and_multi_labels() -> None:
    items: list[dict[str, Any]] = [
        {"messages": [{"role": "user", "content": "goal goal goal"}], "labels": {"t": "a"}},
        {"messages": [{"role": "user", "content": "pasta sauce"}], "labels": {"t": ["b", "c"]}},
        {"text": "another goal", "labels": {"t": "a"}},
    ]
    artifact = await train_classifier(items, embed=_embed, embeddings_model="maestrale-embed")
    assert artifact.targets[0].labels == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"text": "x"}', "labels"),
        (b'{"labels": {"t": "a"}}', "text"),
        (b'{"text": "x", "labels": {"t": 3}}', "non-empty string"),
        (b"not json", "invalid JSON"),
        (b"[1, 2]", "JSON object"),
    ],
)
async def test_bad_lines_name_the_line(tmp_path: Path, line: bytes, message: str) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'{"text": "fine", "labels": {"t": "a"}}\n' + line + b"\n")
    with pytest.raises(TrainingDataError, match=message) as info:
        await train_classifier(path, embed=_embed, embeddings_model="maestrale-embed")
    assert ":2:" in str(info.value)


async def test_a_target_needs_two_labels() -> None:
    items = [{"text": "a", "labels": {"t": "only"}}, {"text": "b", "labels": {"t": "only"}}]
    with pytest.raises(TrainingDataError, match="at least two labels"):
        await train_classifier(items, embed=_embed, embeddings_model="maestrale-embed")


def test_malformed_artifacts(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    with pytest.raises(ArtifactError, match="cannot read"):
        load_artifact(path)
    path.write_bytes(b"{}")
    with pytest.raises(ArtifactError, match="not a maestrale-classifier"):
        load_artifact(path)
    path.write_bytes(
        orjson.dumps(
            {
                "format": "maestrale-classifier",
                "version": 1,
                "embeddings_model": "m",
                "dimension": 3,
                "targets": [{"name": "t", "labels": ["a", "b"], "weights": [[1, 2]], "bias": [0]}],
            }
        )
    )
    with pytest.raises(ArtifactError, match="malformed"):
        load_artifact(path)


async def test_registry_embedder_needs_an_embeddings_model() -> None:
    registry = EngineRegistry([s for s in load_catalog() if s.engine == "builtin"])
    embed = registry_embedder(registry)
    with pytest.raises(EngineError, match="serves no embeddings") as info:
        await embed("maestrale-echo", ["x"])  # the builtin engine embeds, the model does not
    assert info.value.status == 503
    with pytest.raises(EngineError, match="not served"):
        await embed("no-such-model", ["x"])
    assert len((await embed("maestrale-embed", ["x", "y"])).vectors) == 2
    await registry.aclose()
