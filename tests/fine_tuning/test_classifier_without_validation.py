"""A classifier job with no `validation_files`: its embedded examples are written with an empty
validation part and the trainer trains on them (it failed with `cannot reshape array of size 0`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from maestrale.engines.local.classifier_artifact import load_artifact
from maestrale.fine_tuning.training.classifier import train, write_embedded
from maestrale.fine_tuning.training.protocol import TrainingSpec

TARGETS = [{"name": "tone", "labels": ["bad", "good"], "loss_function": "single_class"}]


def test_a_classifier_trains_without_validation_examples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(16, 8)).tolist()  # lists of floats, as the embedder answers them
    labels = [{"tone": ["good" if row[0] > 0 else "bad"]} for row in vectors]
    embedded = tmp_path / "embedded.npz"
    write_embedded(embedded, (vectors, labels), ([], []), TARGETS)
    data = np.load(embedded)
    assert data["train_x"].shape == (16, 8)
    assert data["valid_x"].shape == (0, 8)
    assert data["valid_y0"].shape == (0, 2)

    spec = TrainingSpec(
        job_type="classifier",
        training_files=[],
        validation_files=[],
        hyperparameters={"learning_rate": 0.01},
        work_dir=str(tmp_path),
        out=str(tmp_path / "model"),
        steps=4,
        checkpoint_every=2,
        targets=TARGETS,
        embeddings_model="e5",
        embeddings=str(embedded),
    )
    train(spec)
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    checkpoints = [e for e in events if e["event"] == "checkpoint"]
    assert [e["step"] for e in checkpoints] == [2, 4]
    assert all(e["valid_loss"] is None for e in checkpoints)
    assert events[-1]["event"] == "done"
    assert load_artifact(Path(spec.out)).dimension == 8
