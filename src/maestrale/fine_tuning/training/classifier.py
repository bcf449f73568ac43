"""Classifier fine-tuning: a linear head per target over an embeddings model's vectors.

`python -m maestrale.fine_tuning.training.classifier SPEC` (see `protocol.py`). The worker has
embedded the texts already (with the catalog's embeddings model, as `/v1/classifications` will)
and written them with the labels to `spec.embeddings` (`write_embedded`). The vectors are
L2-normalised, then standardised on the training set; each target's head is trained with its
loss (`single_class`: softmax cross-entropy, labels given as a list sharing the probability;
`multi_class`: a sigmoid per label), the targets' losses summed with their `weight`, by AdamW at
the job's learning rate and weight decay, warm-up then linear decay, batches of `BATCH_SIZE`.
The standardisation is folded into the heads, so the artifact is the classifier engine's usual
one (`classifier_artifact.py`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from maestrale.engines.local.classifier_artifact import ClassifierArtifact, TargetHead
from maestrale.fine_tuning.training.protocol import (
    BATCH_SIZE,
    TrainingDataError,
    TrainingSpec,
    batch_indices,
    emit,
    learning_rate,
    run_trainer,
    save_checkpoint,
)

DEFAULT_WEIGHT_DECAY = 0.0
DEFAULT_WARMUP = 0.0

Matrix = npt.NDArray[np.float32]


def write_embedded(
    path: Path,
    train: tuple[Matrix | list[list[float]], list[dict[str, list[str]]]],
    valid: tuple[Matrix | list[list[float]], list[dict[str, list[str]]]],
    targets: list[dict[str, Any]],
) -> None:
    """The vectors and, per target, multi-hot labels and which rows label it, as one .npz. A
    part without examples (no `validation_files`) is a (0, dimension) matrix."""
    arrays: dict[str, Any] = {}
    dimension = 0
    for part, (vectors, labels) in (("train", train), ("valid", valid)):
        flat = np.asarray(vectors, dtype=np.float32)
        # `reshape(0, -1)` cannot infer a width from no values: the width is the training set's.
        matrix = flat.reshape(len(labels), -1) if len(labels) else flat.reshape(0, dimension)
        dimension = dimension or matrix.shape[1]
        arrays[f"{part}_x"] = matrix
        for t, target in enumerate(targets):
            names = list(target["labels"])
            hot = np.zeros((len(labels), len(names)), dtype=np.float32)
            for row, given in enumerate(labels):
                for label in given.get(target["name"], []):
                    if label in names:  # the API refused other labels; skipped lines aside
                        hot[row, names.index(label)] = 1.0
            arrays[f"{part}_y{t}"] = hot
    np.savez(path, **arrays)


def _normalised(x: Matrix) -> Matrix:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Matrix = x / norms
    return result


def _losses(
    heads: Any, x: Any, ys: list[Any], targets: list[dict[str, Any]]
) -> tuple[Any, int, int]:
    """(weighted loss, predictions right, predictions made) of rows `x` over every target."""
    import torch

    total = torch.zeros(())
    right = made = 0
    for head, y, target in zip(heads, ys, targets, strict=True):
        labelled = y.sum(dim=1) > 0
        if not bool(labelled.any()):
            continue
        logits, y = head(x[labelled]), y[labelled]
        if target["loss_function"] == "multi_class":
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y)
            right += int(((logits > 0).float() == y).sum())
            made += y.numel()
        else:
            loss = torch.nn.functional.cross_entropy(logits, y / y.sum(dim=1, keepdim=True))
            right += int(y[torch.arange(len(y)), logits.argmax(dim=1)].gt(0).sum())
            made += len(y)
        total = total + float(target.get("weight", 1.0)) * loss
    return total, right, made


def train(spec: TrainingSpec) -> None:
    import torch

    began = time.perf_counter()
    torch.set_num_threads(max(1, spec.threads))
    torch.manual_seed(spec.seed)
    if spec.embeddings is None:
        raise TrainingDataError("no embedded examples")
    data = np.load(spec.embeddings)
    raw = _normalised(data["train_x"])
    if len(raw) == 0:
        raise TrainingDataError("no training example")
    mean, std = raw.mean(axis=0), raw.std(axis=0) + 1e-6
    x = torch.from_numpy((raw - mean) / std)
    ys = [torch.from_numpy(data[f"train_y{t}"]) for t in range(len(spec.targets))]
    valid_raw = _normalised(data["valid_x"]) if len(data["valid_x"]) else None
    vx = torch.from_numpy((valid_raw - mean) / std) if valid_raw is not None else None
    vys = [torch.from_numpy(data[f"valid_y{t}"]) for t in range(len(spec.targets))]
    heads = torch.nn.ModuleList(
        torch.nn.Linear(x.shape[1], len(target["labels"])) for target in spec.targets
    )
    hp = spec.hyperparameters
    decay = hp.get("weight_decay")
    optimizer = torch.optim.AdamW(
        heads.parameters(),
        lr=float(hp["learning_rate"]),
        weight_decay=DEFAULT_WEIGHT_DECAY if decay is None else float(decay),
    )
    step = 0
    if spec.resume:
        state = torch.load(spec.resume, weights_only=False)
        heads.load_state_dict(state["heads"])
        optimizer.load_state_dict(state["optimizer"])
        step = int(state["step"])
    emit("loaded", seconds=round(time.perf_counter() - began, 3), resumed_from=step)
    warmup = hp.get("warmup_fraction")
    warmup = DEFAULT_WARMUP if warmup is None else float(warmup)
    recent: list[float] = []
    while step < spec.steps:
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, spec.steps, float(hp["learning_rate"]), warmup)
        rows = torch.tensor(batch_indices(len(x), step, BATCH_SIZE, spec.seed))
        loss, _, _ = _losses(heads, x[rows], [y[rows] for y in ys], spec.targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        recent.append(float(loss))
        if step % spec.checkpoint_every == 0 or step == spec.steps:
            valid: tuple[float | None, float | None] = (None, None)
            if vx is not None:
                with torch.no_grad():
                    measured, right, made = _losses(heads, vx, vys, spec.targets)
                valid = float(measured), (right / made if made else None)
            state = {"heads": heads.state_dict(), "optimizer": optimizer.state_dict()}
            save_checkpoint(spec, step, state, recent, valid, None)
            recent = []
    artifact = ClassifierArtifact(
        embeddings_model=spec.embeddings_model,
        dimension=int(x.shape[1]),
        targets=[
            _folded(head, target, mean, std)
            for head, target in zip(heads, spec.targets, strict=True)
        ],
        metadata={"examples": len(x), "steps": step, "model": spec.model_name},
    )
    artifact.save(Path(spec.out))
    emit("done", path=spec.out, steps=step, trained_tokens=None)


def _folded(head: Any, target: dict[str, Any], mean: Matrix, std: Matrix) -> TargetHead:
    """The head over standardised vectors as one over the plain (normalised) vectors."""
    weights = head.weight.detach().numpy().astype(np.float64) / std
    bias = head.bias.detach().numpy().astype(np.float64) - weights @ mean
    activation = "sigmoid" if target["loss_function"] == "multi_class" else "softmax"
    return TargetHead(str(target["name"]), list(target["labels"]), weights, bias, activation)


if __name__ == "__main__":
    run_trainer(train, sys.argv[1:])
