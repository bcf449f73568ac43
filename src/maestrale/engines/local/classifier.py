"""The `classifier` engine: an embeddings model plus a trained linear head (an artifact file).

Catalog entry: `engine = "classifier"`, `options.artifact = "path/to/classifier.json"`,
`capabilities = ["classification"]`. The artifact names the embeddings model (a catalog id);
the caller's `Embedder` embeds with it, so the embeddings weights are shared with
`/v1/embeddings`. A fine-tuned classifier passes its own artifact path in the request. An entry
with `options.embeddings_model` and no artifact is only a base for classifier fine-tuning jobs
(`fine_tuning` capability): it classifies through its fine-tuned models, and a request naming
it gets a 400.
Artifacts are read off the event loop and kept (a few, by path) once loaded.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from maestrale.engines.local import engine_options
from maestrale.engines.local.classifier_artifact import (
    ArtifactError,
    ClassifierArtifact,
    load_artifact,
)
from maestrale.engines.moderation_types import ClassificationRequest, ClassificationResult
from maestrale.engines.specs import CatalogError, ModelSpec
from maestrale.engines.types import EngineError

MAX_CACHED = 16


class ClassifierOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    artifact: str | None = Field(default=None, min_length=1)
    embeddings_model: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one(self) -> ClassifierOptions:
        if self.artifact is None and self.embeddings_model is None:
            raise ValueError("a classifier needs options.artifact or options.embeddings_model")
        return self


class ClassifierEngine:
    """Classification with a softmax head per target over an embeddings model's vectors."""

    def __init__(self, artifact: ClassifierArtifact | None, path: Path | None) -> None:
        self._default = path
        self._cache: dict[Path, ClassifierArtifact] = {}
        if artifact is not None and path is not None:
            self._cache[path] = artifact

    async def _artifact(self, given: str | None) -> ClassifierArtifact:
        path = Path(given) if given else self._default
        if path is None:
            raise EngineError(
                400,
                "this model is the base of classifier fine-tuning jobs and has no head of its "
                "own: classify with one of its fine-tuned (ft:) models",
                code="invalid_request",
            )
        artifact = self._cache.get(path)
        if artifact is None:
            try:
                artifact = await asyncio.to_thread(load_artifact, path)
            except ArtifactError as exc:
                raise EngineError(503, str(exc), code="engine_unavailable") from exc
            if len(self._cache) >= MAX_CACHED:
                self._cache.pop(next(k for k in self._cache if k != self._default))
            self._cache[path] = artifact
        return artifact

    async def classify(self, request: ClassificationRequest) -> ClassificationResult:
        """Embed the inputs with the artifact's embeddings model and apply every target head."""
        if request.embed is None:
            raise EngineError(500, "the classifier engine needs an embedder", code="engine_error")
        artifact = await self._artifact(request.artifact)
        embedded = await request.embed(artifact.embeddings_model, list(request.inputs))
        if len(embedded.vectors) != len(request.inputs):
            # An engine stopped mid-way (shutdown) may hand back fewer vectors than texts.
            raise EngineError(
                503, "the embeddings model returned too few vectors", code="engine_unavailable"
            )
        try:
            results = artifact.predict(embedded.vectors)
        except ArtifactError as exc:
            raise EngineError(503, str(exc), code="engine_unavailable") from exc
        return ClassificationResult(results, embedded.usage)


def create_engine(spec: ModelSpec) -> ClassifierEngine:
    """Factory of the engine registry: the artifact must exist and be valid (`CatalogError`)."""
    options = engine_options(ClassifierOptions, spec)
    if options.artifact is None:
        return ClassifierEngine(None, None)
    path = Path(options.artifact).expanduser()
    try:
        artifact = load_artifact(path)
    except ArtifactError as exc:
        raise CatalogError(str(exc)) from exc
    return ClassifierEngine(artifact, path)
