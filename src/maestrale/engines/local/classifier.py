"""The `classifier` engine: an embeddings model plus a trained linear head (an artifact file).

Catalog entry: `engine = "classifier"`, `options.artifact = "path/to/classifier.json"`,
`capabilities = ["classification"]`. The artifact names the embeddings model (a catalog id);
the caller's `Embedder` embeds with it, so the embeddings weights are shared with
`/v1/embeddings`. A fine-tuned classifier passes its own artifact path in the request.
Artifacts are read off the event loop and kept (a few, by path) once loaded.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from maestrale.catalog.config import CatalogError, ModelSpec
from maestrale.engines.local import engine_options
from maestrale.engines.local.classifier_artifact import (
    ArtifactError,
    ClassifierArtifact,
    load_artifact,
)
from maestrale.engines.moderation_types import ClassificationRequest, ClassificationResult
from maestrale.engines.types import EngineError

MAX_CACHED = 16


class ClassifierOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    artifact: str = Field(min_length=1)


class ClassifierEngine:
    """Classification with a softmax head per target over an embeddings model's vectors."""

    def __init__(self, artifact: ClassifierArtifact, path: Path) -> None:
        self._default = path
        self._cache: dict[Path, ClassifierArtifact] = {path: artifact}

    async def _artifact(self, given: str | None) -> ClassifierArtifact:
        path = Path(given) if given else self._default
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
    path = Path(options.artifact).expanduser()
    try:
        artifact = load_artifact(path)
    except ArtifactError as exc:
        raise CatalogError(str(exc)) from exc
    return ClassifierEngine(artifact, path)
