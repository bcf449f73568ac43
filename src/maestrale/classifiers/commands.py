"""`maestrale classifier train --data X.jsonl --embeddings MODEL --out PATH`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

from maestrale.classifiers.embedder import registry_embedder
from maestrale.config import Settings
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import CatalogError, load_catalog
from maestrale.engines.types import EngineError


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    common: Callable[[argparse.ArgumentParser], None],
) -> None:
    classifier = sub.add_parser("classifier", help="train classifier heads")
    classifier_sub = classifier.add_subparsers(dest="classifier_command", required=True)
    train = classifier_sub.add_parser(
        "train", help="train a classifier artifact from a labelled JSONL file"
    )
    common(train)
    train.add_argument("--data", type=Path, required=True, help="JSONL: {text|messages, labels}")
    train.add_argument(
        "--embeddings", required=True, help="catalog id of the embeddings model to build on"
    )
    train.add_argument("--out", type=Path, required=True, help="where to write the artifact")
    train.add_argument("--models", type=Path, help="TOML model catalog merged over defaults")
    train.add_argument("--regularization", type=float, default=10.0, help="inverse L2 strength (C)")


async def _train(settings: Settings, args: argparse.Namespace) -> int:
    # numpy and the training code: imported by this command, not by every `maestrale serve`
    from maestrale.classifiers.training import TrainingDataError, train_classifier

    registry = EngineRegistry(load_catalog(settings.models))
    try:
        artifact = await train_classifier(
            args.data,
            embed=registry_embedder(registry),
            embeddings_model=args.embeddings,
            out=args.out,
            regularization=args.regularization,
        )
    except (TrainingDataError, EngineError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    finally:
        await registry.aclose()
    for head in artifact.targets:
        sys.stdout.write(f"target {head.name}: labels {', '.join(head.labels)}\n")
    sys.stdout.write(f"wrote {args.out} ({artifact.metadata['examples']} examples)\n")
    return 0


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Run a `classifier` subcommand (no database needed)."""
    try:
        return asyncio.run(_train(settings, args))
    except CatalogError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
