"""An `Embedder` over the engine registry: embeds with a catalog model named by id or alias."""

from __future__ import annotations

from maestrale.engines.moderation_types import Embedder
from maestrale.engines.protocols import EmbeddingsEngine
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.types import EmbeddingRequest, EmbeddingResult, EngineError


def registry_embedder(registry: EngineRegistry) -> Embedder:
    """Embed through `registry`; a model that is not served or embeds nothing is a 503 (the
    moderation or classifier model depending on it is misconfigured, not the client's fault)."""

    async def embed(model: str, texts: list[str]) -> EmbeddingResult:
        resolved = registry.resolve(model)
        if (
            resolved is None
            or not resolved.spec.has("embeddings")
            or not isinstance(resolved.engine, EmbeddingsEngine)
        ):
            raise EngineError(
                503,
                f"the embeddings model {model!r} this model depends on is not served "
                "(or serves no embeddings)",
                code="engine_unavailable",
            )
        upstream = resolved.spec.upstream_model or resolved.spec.id
        return await resolved.engine.embed(EmbeddingRequest(model=upstream, inputs=texts))

    return embed
