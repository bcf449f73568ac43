"""What a trainer needs besides the data files: the base GGUF of a completion job; for a
classifier job, every text embedded with the base's embeddings model (through the engine
registry, as `/v1/classifications` will embed, with no transaction open)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson

from maestrale.classifiers.embedder import registry_embedder
from maestrale.classifiers.training import TrainingDataError, parse_example
from maestrale.core.jobs.worker import PermanentJobError
from maestrale.engines.registry import EngineRegistry
from maestrale.fine_tuning.training.protocol import DataFile
from maestrale.gateway.estimates import CHARS_PER_TOKEN

EMBED_BATCH = 64


@dataclass(frozen=True, slots=True)
class TrainingInputs:
    """What a trainer reads besides the data files: a base GGUF, or the embedded examples."""

    base_model: str | None = None
    embeddings_model: str = ""
    embeddings: str | None = None


def _classifier_examples(path: str, seq_len: int) -> tuple[list[str], list[dict[str, list[str]]]]:
    texts, labels = [], []
    for number, line in enumerate(Path(path).read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            text, given = parse_example(orjson.loads(line), f"line {number}")
        except (orjson.JSONDecodeError, TrainingDataError):
            continue  # skipped as the job's invalid_sample_skip_percentage allowed
        texts.append(text[: seq_len * CHARS_PER_TOKEN])
        labels.append(given)
    return texts, labels


async def prepare(
    engines: EngineRegistry,
    job_type: str,
    root: str,
    hyperparameters: dict[str, Any],
    targets: list[dict[str, Any]],
    training: list[DataFile],
    validation: list[str],
    work: Path,
) -> TrainingInputs:
    resolved = engines.resolve(root)
    if resolved is None:
        raise PermanentJobError(f"the base model {root!r} is not served any more")
    spec = resolved.spec
    if job_type == "completion":
        if spec.engine != "llama_cpp":
            raise PermanentJobError(f"the base model {root!r} is not a llama.cpp model")
        from maestrale.engines.local.llama_model import model_path, parse_options

        return TrainingInputs(base_model=str(model_path(parse_options(spec))))
    embeddings_model = str(spec.options.get("embeddings_model") or "")
    if not embeddings_model:
        raise PermanentJobError(f"the base model {root!r} names no embeddings model")
    seq_len = int(hyperparameters.get("seq_len") or 512)
    embed = registry_embedder(engines)
    parts = []
    for paths in ([f.path for f in training], validation):
        texts: list[str] = []
        labels: list[dict[str, list[str]]] = []
        for path in paths:
            more_texts, more_labels = await anyio.to_thread.run_sync(
                _classifier_examples, path, seq_len
            )
            texts += more_texts
            labels += more_labels
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            result = await embed(embeddings_model, texts[start : start + EMBED_BATCH])
            vectors.extend(result.vectors)
        parts.append((vectors, labels))
    from maestrale.fine_tuning.training.classifier import write_embedded

    out = work / "embedded.npz"
    await anyio.to_thread.run_sync(write_embedded, out, parts[0], parts[1], targets)
    return TrainingInputs(embeddings_model=embeddings_model, embeddings=str(out))
