"""What the worker and a trainer subprocess say to each other.

The worker writes a `TrainingSpec` as JSON to a file and starts
`python -m maestrale.fine_tuning.training.<kind> SPEC`; the trainer reports on stdout, one JSON
object a line:

- `{"event": "loaded", "seconds": ...}` once the model and the data are ready;
- `{"event": "checkpoint", "step": N, "train_loss": ..., "valid_loss": ...,
  "valid_mean_token_accuracy": ..., "path": FILE, "trained_tokens": ...}` after step N, with
  the state to resume from in FILE (the worker keeps it durable, then may delete the file);
- `{"event": "done", "path": FILE, "steps": N, "trained_tokens": ...}`: the trained model;
- `{"event": "error", "message": ...}` for data it cannot train on (exit status 2).
Anything else (a crash) is a non-zero exit with the trace on stderr.

The trainer holds its stdin open to the worker and exits when it reaches end of file: a worker
killed with SIGKILL takes its training down with it, so that only the worker that holds the job
trains it.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

DATA_ERROR_STATUS = 2
BATCH_SIZE = 8


class TrainingDataError(ValueError):
    """The data cannot be trained on; the message says why (the job fails, without retry)."""


@dataclass(slots=True)
class DataFile:
    path: str
    weight: float = 1.0


@dataclass(slots=True)
class TrainingSpec:
    """Everything a trainer needs, written by the worker."""

    job_type: str
    training_files: list[DataFile]
    validation_files: list[str]
    hyperparameters: dict[str, Any]
    work_dir: str
    out: str
    steps: int
    checkpoint_every: int
    seed: int = 0
    threads: int = 1
    resume: str | None = None
    base_model: str | None = None  # completion: the base GGUF file
    model_name: str = ""
    targets: list[dict[str, Any]] = field(default_factory=list)  # classifier targets
    embeddings_model: str = ""  # classifier: the catalog id of its embeddings model
    embeddings: str | None = None  # classifier: .npz of the embedded texts

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def read(cls, path: Path) -> TrainingSpec:
        data = json.loads(path.read_text())
        data["training_files"] = [DataFile(**item) for item in data["training_files"]]
        return cls(**data)


def emit(event: str, **fields: Any) -> None:
    """Report one event to the worker."""
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def die_with_parent() -> None:
    """Exit as soon as the worker's end of stdin closes (the worker died or gave up)."""

    def watch() -> None:
        try:
            while sys.stdin.buffer.read(1024):
                pass
        finally:
            os._exit(3)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def save_checkpoint(
    spec: TrainingSpec,
    step: int,
    state: dict[str, Any],
    losses: list[float],
    valid: tuple[float | None, float | None],
    trained_tokens: int | None,
) -> None:
    """Save `state` (torch) as the checkpoint of `step` and report it with the mean training
    loss since the last one and the validation loss and accuracy."""
    import torch

    path = Path(spec.work_dir) / f"checkpoint-{step}.pt"
    tmp = path.with_suffix(".tmp")
    torch.save({"step": step, "trained_tokens": trained_tokens, **state}, tmp)
    tmp.replace(path)
    emit(
        "checkpoint",
        step=step,
        train_loss=sum(losses) / len(losses) if losses else None,
        valid_loss=valid[0],
        valid_mean_token_accuracy=valid[1],
        path=str(path),
        trained_tokens=trained_tokens,
    )


def run_trainer(train: Callable[[TrainingSpec], None], argv: list[str]) -> NoReturn:
    """The main of a trainer: read the spec, train, exit (status 2 for unusable data).

    It leaves by `os._exit`, once its output is flushed: the thread watching stdin must not
    hold up the interpreter's shutdown.
    """
    die_with_parent()
    status = 0
    try:
        train(TrainingSpec.read(Path(argv[0])))
    except TrainingDataError as exc:
        emit("error", message=str(exc))
        status = DATA_ERROR_STATUS
    except BaseException:
        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def learning_rate(step: int, steps: int, peak: float, warmup_fraction: float) -> float:
    """Linear warm-up over `warmup_fraction` of the steps, then linear decay to zero: the
    rate of optimizer step `step` (0-based)."""
    warmup = int(steps * warmup_fraction)
    if step < warmup:
        return peak * (step + 1) / warmup
    left = max(1, steps - warmup)
    return peak * max(0.0, 1.0 - (step - warmup) / left)


@functools.lru_cache(maxsize=4)
def epoch_order(n: int, epoch: int, seed: int) -> tuple[int, ...]:
    """The order the examples are seen in during `epoch`: the same on every run with this seed,
    so that a resumed training sees the batches the interrupted one would have."""
    import random

    order = list(range(n))
    random.Random(seed * 1_000_003 + epoch).shuffle(order)
    return tuple(order)


def batch_indices(n: int, step: int, batch: int, seed: int) -> list[int]:
    """The examples of optimizer step `step`: `batch` consecutive ones of the epochs' orders."""
    picked = []
    for position in range(step * batch, step * batch + min(batch, n)):
        epoch, index = divmod(position, n)
        picked.append(epoch_order(n, epoch, seed)[index])
    return picked
