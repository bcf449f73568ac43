"""Train a classifier (embeddings model + softmax head per target) from a labelled JSONL.

The data format is the platform's classifier fine-tuning format, one JSON object per line:
`{"text": "...", "labels": {"target": "label", ...}}`, or `{"messages": [...], "labels": ...}`
for conversations (their messages' text, one per line, as `/v1/chat/classifications` sees
them). A label may be a list (multi-label): the line then counts once for each of its labels.
A line may omit a target; each target is trained on the lines that label it.

Each head is a multinomial logistic regression (scikit-learn, L2-regularised) on the
L2-normalised embeddings, stored as a JSON artifact (`classifier_artifact.py`).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from maestrale.engines.local.classifier_artifact import ClassifierArtifact, TargetHead
from maestrale.engines.moderation_types import Embedder
from maestrale.engines.text import content_text

EMBED_BATCH = 256


class TrainingDataError(ValueError):
    """The training data is unusable; the message names the line and the problem."""


Example = tuple[str, dict[str, list[str]]]


def parse_example(item: Any, where: str) -> Example:
    """One training line as (text, {target: [labels]})."""
    if not isinstance(item, Mapping):
        raise TrainingDataError(f"{where}: expected a JSON object")
    if isinstance(item.get("text"), str):
        text = item["text"]
    elif isinstance(item.get("messages"), list):
        messages = item["messages"]
        if not all(isinstance(m, Mapping) for m in messages):
            raise TrainingDataError(f"{where}: `messages` must be a list of objects")
        text = "\n".join(content_text(m.get("content")) for m in messages)
    else:
        raise TrainingDataError(f"{where}: needs a `text` string or a `messages` list")
    labels = item.get("labels")
    if not isinstance(labels, Mapping) or not labels:
        raise TrainingDataError(f"{where}: needs a non-empty `labels` object")
    parsed: dict[str, list[str]] = {}
    for target, value in labels.items():
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, str) and v for v in values):
            raise TrainingDataError(
                f"{where}: label of target {target!r} must be a non-empty string or list of them"
            )
        parsed[str(target)] = [str(v) for v in values]
    return text, parsed


def read_examples(path: Path) -> list[Example]:
    """Every example of a JSONL file (blank lines skipped)."""
    examples = []
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise TrainingDataError(f"cannot read {path}: {exc.strerror}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise TrainingDataError(f"{path}:{number}: invalid JSON: {exc}") from exc
        examples.append(parse_example(item, f"{path}:{number}"))
    if not examples:
        raise TrainingDataError(f"{path}: no training examples")
    return examples


def _fit_head(
    name: str, rows: list[tuple[int, str]], matrix: np.ndarray[Any, Any], regularization: float
) -> TargetHead:
    try:
        linear_model = importlib.import_module("sklearn.linear_model")  # heavy: on first use
    except ImportError as exc:  # pragma: no cover - extra missing
        raise TrainingDataError(
            "training needs scikit-learn: pip install 'maestrale[moderation]'"
        ) from exc
    labels = sorted({label for _, label in rows})
    if len(labels) < 2:
        raise TrainingDataError(f"target {name!r} needs at least two labels, got {labels}")
    x = matrix[[i for i, _ in rows]]
    y = np.asarray([labels.index(label) for _, label in rows])
    model = linear_model.LogisticRegression(C=regularization, max_iter=2000)
    model.fit(x, y)
    coef = np.asarray(model.coef_, dtype=np.float64)
    intercept = np.asarray(model.intercept_, dtype=np.float64)
    if len(labels) == 2:
        # Binary: p(second) = sigmoid(w·x + b) = softmax([0, w·x + b])[1].
        coef = np.vstack([np.zeros_like(coef[0]), coef[0]])
        intercept = np.asarray([0.0, intercept[0]])
    return TargetHead(name, labels, coef, intercept)


async def train_classifier(
    data: Path | Iterable[Mapping[str, Any]],
    *,
    embed: Embedder,
    embeddings_model: str,
    out: Path | None = None,
    regularization: float = 10.0,
) -> ClassifierArtifact:
    """Embed the examples with `embeddings_model`, fit one head per target, save to `out`.

    `regularization` is scikit-learn's C (larger = less regularised); embeddings are unit
    vectors, so the default is larger than scikit-learn's own.
    """
    if isinstance(data, Path):
        examples = read_examples(data)
    else:
        examples = [parse_example(item, f"example {i}") for i, item in enumerate(data, 1)]
        if not examples:
            raise TrainingDataError("no training examples")
    texts = [text for text, _ in examples]
    vectors: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        vectors.extend((await embed(embeddings_model, texts[start : start + EMBED_BATCH])).vectors)
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    matrix = matrix / norms
    by_target: dict[str, list[tuple[int, str]]] = {}
    for i, (_, labels) in enumerate(examples):
        for target, values in labels.items():
            by_target.setdefault(target, []).extend((i, value) for value in values)
    heads = [
        _fit_head(name, rows, matrix, regularization) for name, rows in sorted(by_target.items())
    ]
    artifact = ClassifierArtifact(
        embeddings_model=embeddings_model,
        dimension=int(matrix.shape[1]),
        targets=heads,
        metadata={
            "examples": len(examples),
            "created": int(time.time()),
            "regularization": regularization,
            "label_counts": {
                head.name: {
                    label: sum(1 for _, value in by_target[head.name] if value == label)
                    for label in head.labels
                }
                for head in heads
            },
        },
    )
    if out is not None:
        artifact.save(out)
    return artifact
