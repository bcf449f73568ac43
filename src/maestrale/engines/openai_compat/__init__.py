"""The `openai_compat` engine: any OpenAI-compatible inference server as a chat, FIM and
embeddings backend, through one pooled HTTP client per upstream."""

from maestrale.engines.openai_compat.engine import OpenAICompatEngine
from maestrale.engines.openai_compat.options import EngineOptions, UpstreamConfig, config_from_spec
from maestrale.engines.specs import ModelSpec

__all__ = ["EngineOptions", "OpenAICompatEngine", "UpstreamConfig", "create_engine"]


def create_engine(spec: ModelSpec) -> OpenAICompatEngine:
    """Factory of the engine registry: `base_url` is required, the key is read from the
    environment variable `api_key_env` (no Authorization header when unset), `options` are
    validated (`EngineOptions`); raise `CatalogError` naming the model otherwise."""
    return OpenAICompatEngine(config_from_spec(spec))
