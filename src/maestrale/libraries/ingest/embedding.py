"""Embeddings of chunks and queries through the catalog's embeddings model.

The model is the setting `library_embedding_model` (default `mistral-embed`, which the default
catalog serves with the local multilingual-e5-small when the [local] extra is installed). Its
engine is called as the /v1/embeddings endpoint calls it (an `EmbeddingRequest` to the engine
the registry resolves), in batches of `BATCH` texts, `CONCURRENCY` batches at a time; usage is
not recorded here: the caller accounts for the tokens returned, as library processing.

Vectors are float32 and L2-normalised (a dot product is the cosine). `model` is the catalog id
of the model (not the alias configured): chunks embedded by one model are searched only with
queries embedded by the same, whatever alias names it.

E5 models embed queries and documents with different prefixes ("query: ", "passage: "); the
`e5` engine takes its prefix from its catalog entry, "query: " by default. Documents may be
embedded by a second entry of the same model with `options.prefix = "passage"`, named by the
setting `library_document_embedding_model`; its vectors are reported under the id of
`library_embedding_model`, the model whose vector space they share.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from maestrale.engines.protocols import EmbeddingsEngine
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import EmbeddingRequest, EngineError
from maestrale.libraries.ingest.errors import EmbeddingRefused, EmbeddingUnavailable

if TYPE_CHECKING:
    from maestrale.config import Settings
    from maestrale.engines.registry import EngineRegistry

__all__ = ["BATCH", "CONCURRENCY", "Embedded", "embed", "embed_query", "embedding_model"]

BATCH = 64
CONCURRENCY = 4
Vectors = npt.NDArray[np.float32]


class EngineServices(Protocol):
    """What embedding needs of `Services`."""

    @property
    def settings(self) -> Settings: ...

    @property
    def engines(self) -> EngineRegistry: ...


@dataclass(frozen=True, slots=True)
class Embedded:
    """One vector per text (rows of `vectors`, shape (n, dimension)), the catalog id of the
    model, and the tokens the model counted."""

    vectors: Vectors
    model: str
    tokens: int


@dataclass(frozen=True, slots=True)
class _Model:
    spec: ModelSpec
    engine: EmbeddingsEngine

    @property
    def upstream(self) -> str:
        return self.spec.upstream_model or self.spec.id


def _model(services: EngineServices, name: str, setting: str) -> _Model:
    resolved = services.engines.resolve(name)
    if resolved is None:
        raise EmbeddingUnavailable(
            f"the embeddings model {name!r} of libraries (setting {setting}) is not served: "
            "install the [local] extra for the default local model, or name a served model"
        )
    if not resolved.spec.has("embeddings") or not isinstance(resolved.engine, EmbeddingsEngine):
        raise EmbeddingUnavailable(
            f"the model {name!r} of libraries (setting {setting}) does not serve embeddings"
        )
    return _Model(resolved.spec, resolved.engine)


async def _batch(model: _Model, texts: list[str]) -> tuple[Vectors, int]:
    try:
        result = await model.engine.embed(EmbeddingRequest(model=model.upstream, inputs=texts))
    except EngineError as exc:
        where = f"the embeddings model {model.spec.id!r} failed: {exc.message}"
        if exc.status >= 500 or exc.status in (408, 429):
            raise EmbeddingUnavailable(where) from exc
        raise EmbeddingRefused(where) from exc
    vectors = np.asarray(result.vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts) or vectors.shape[1] == 0:
        raise EmbeddingUnavailable(
            f"the embeddings model {model.spec.id!r} answered {vectors.shape} vectors for "
            f"{len(texts)} texts"
        )
    tokens = result.usage.prompt_tokens or sum(len(text) // 4 + 1 for text in texts)
    return vectors, tokens


def _normalised(vectors: Vectors) -> Vectors:
    vectors[~np.isfinite(vectors)] = 0.0
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors, dtype=np.float32))
    norms[norms == 0] = 1.0
    result: Vectors = (vectors / norms[:, None]).astype(np.float32, copy=False)
    return result


async def _embed_all(model: _Model, texts: Sequence[str]) -> tuple[Vectors, int]:
    batches = [list(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]
    gate = asyncio.Semaphore(CONCURRENCY)

    async def run(batch: list[str]) -> tuple[Vectors, int]:
        async with gate:
            return await _batch(model, batch)

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(run(batch)) for batch in batches]
    results = [task.result() for task in tasks]
    dimensions = {vectors.shape[1] for vectors, _ in results}
    if len(dimensions) > 1:
        raise EmbeddingUnavailable(
            f"the embeddings model {model.spec.id!r} answered vectors of several dimensions "
            f"({sorted(dimensions)})"
        )
    vectors = np.concatenate([vectors for vectors, _ in results], axis=0)
    return _normalised(vectors), sum(tokens for _, tokens in results)


def _unwrapped(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first failure of a batch: what the caller handles, not the group around it."""
    first = group.exceptions[0]
    return _unwrapped(first) if isinstance(first, BaseExceptionGroup) else first


def embedding_model(services: EngineServices) -> str:
    """The catalog id of the libraries' embeddings model (`EmbeddingUnavailable` when it is
    not served): what `Embedded.model` and `embed_query` will say."""
    name = services.settings.library_embedding_model
    return _model(services, name, "library_embedding_model").spec.id


async def embed(
    services: EngineServices, texts: Sequence[str], *, model_name: str | None = None
) -> Embedded:
    """Embed a document's chunks (`EmbeddingUnavailable`: model not served or down, worth
    retrying; `EmbeddingRefused`: the model refused the texts), by the libraries' model or
    `model_name` (a search index's)."""
    settings = services.settings
    if model_name is not None:
        space = _model(services, model_name, "the search index's embedding")
    else:
        space = _model(services, settings.library_embedding_model, "library_embedding_model")
    model = space
    if model_name is None and settings.library_document_embedding_model:
        model = _model(
            services,
            settings.library_document_embedding_model,
            "library_document_embedding_model",
        )
    if not texts:
        return Embedded(np.zeros((0, 0), dtype=np.float32), space.spec.id, 0)
    try:
        vectors, tokens = await _embed_all(model, texts)
    except BaseExceptionGroup as group:
        raise _unwrapped(group) from None
    return Embedded(vectors, space.spec.id, tokens)


async def embed_query(
    services: EngineServices, text: str, *, model_name: str | None = None
) -> tuple[Vectors, str, int]:
    """The vector of a search query (1-D), the model's catalog id, and the tokens counted: by
    the libraries' model, or `model_name` (a search index's)."""
    if model_name is not None:
        model = _model(services, model_name, "the search index's embedding")
    else:
        model = _model(
            services, services.settings.library_embedding_model, "library_embedding_model"
        )
    vectors, tokens = await _batch(model, [text])
    return _normalised(vectors)[0], model.spec.id, tokens
