"""The classifier artifact: which embeddings model to use, and a softmax head per target.

A JSON file, written by `maestrale.classifiers.training.train_classifier`:

```json
{"format": "maestrale-classifier", "version": 1,
 "embeddings_model": "multilingual-e5-small", "dimension": 384,
 "targets": [{"name": "sentiment", "labels": ["negative", "positive"],
              "weights": [[...], [...]], "bias": [0.1, -0.1]}],
 "metadata": {"examples": 40, ...}}
```

`weights` has one row of `dimension` numbers per label; a text's scores for a target are
softmax(weights · v + bias) over its labels, where v is the text's embedding (L2-normalised).
A target trained for several labels at once (`"activation": "sigmoid"`, a fine-tuning job's
`multi_class` loss) scores each label on its own: sigmoid(weights · v + bias).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

FORMAT = "maestrale-classifier"
VERSION = 1
ACTIVATIONS = ("softmax", "sigmoid")


class ArtifactError(ValueError):
    """The artifact file is missing, unreadable or not a classifier artifact."""


@dataclass(slots=True)
class TargetHead:
    name: str
    labels: list[str]
    weights: npt.NDArray[np.float64]  # (labels, dimension)
    bias: npt.NDArray[np.float64]  # (labels,)
    activation: str = "softmax"  # or "sigmoid": each label scored on its own

    def probabilities(self, vectors: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        logits = vectors @ self.weights.T + self.bias
        if self.activation == "sigmoid":
            scores: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-logits))
            return scores
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        result: npt.NDArray[np.float64] = exp / exp.sum(axis=1, keepdims=True)
        return result


@dataclass(slots=True)
class ClassifierArtifact:
    embeddings_model: str
    dimension: int
    targets: list[TargetHead]
    metadata: dict[str, Any] = field(default_factory=dict)

    def predict(self, vectors: Sequence[Sequence[float]]) -> list[dict[str, dict[str, float]]]:
        """Per text: {target: {label: probability}}."""
        matrix = np.asarray(vectors, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[1] != self.dimension:
            got = matrix.shape[1] if matrix.ndim == 2 else "?"
            raise ArtifactError(
                f"the embeddings model {self.embeddings_model!r} returned {got} dimensions; "
                f"the classifier head expects {self.dimension}"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        matrix = matrix / norms
        results: list[dict[str, dict[str, float]]] = [{} for _ in range(matrix.shape[0])]
        for head in self.targets:
            probs = head.probabilities(matrix)
            for i, row in enumerate(probs.tolist()):
                results[i][head.name] = {
                    label: round(p, 6) for label, p in zip(head.labels, row, strict=True)
                }
        return results

    def to_json(self) -> bytes:
        return orjson.dumps(
            {
                "format": FORMAT,
                "version": VERSION,
                "embeddings_model": self.embeddings_model,
                "dimension": self.dimension,
                "targets": [
                    {
                        "name": head.name,
                        "labels": head.labels,
                        "weights": head.weights.tolist(),
                        "bias": head.bias.tolist(),
                        "activation": head.activation,
                    }
                    for head in self.targets
                ],
                "metadata": self.metadata,
            },
            option=orjson.OPT_SERIALIZE_NUMPY,
        )

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(self.to_json())
        tmp.replace(path)


def load_artifact(path: Path) -> ClassifierArtifact:
    """Read and check an artifact file (`ArtifactError` with the reason)."""
    try:
        data = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise ArtifactError(f"cannot read classifier artifact {path}: {exc.strerror}") from exc
    except orjson.JSONDecodeError as exc:
        raise ArtifactError(f"classifier artifact {path} is not JSON: {exc}") from exc
    try:
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            raise ArtifactError(f"{path} is not a {FORMAT} v{VERSION} artifact")
        dimension = int(data["dimension"])
        targets = []
        for target in data["targets"]:
            weights = np.asarray(target["weights"], dtype=np.float64)
            bias = np.asarray(target["bias"], dtype=np.float64)
            labels = [str(label) for label in target["labels"]]
            if weights.shape != (len(labels), dimension) or bias.shape != (len(labels),):
                raise ArtifactError(f"{path}: target {target['name']!r} has malformed weights")
            activation = str(target.get("activation", "softmax"))
            if activation not in ACTIVATIONS:
                raise ArtifactError(f"{path}: unknown activation {activation!r}")
            targets.append(TargetHead(str(target["name"]), labels, weights, bias, activation))
        if not targets:
            raise ArtifactError(f"{path}: the classifier has no target")
        return ClassifierArtifact(
            str(data["embeddings_model"]), dimension, targets, dict(data.get("metadata") or {})
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, ArtifactError):
            raise
        raise ArtifactError(f"{path}: malformed classifier artifact ({exc!r})") from exc
