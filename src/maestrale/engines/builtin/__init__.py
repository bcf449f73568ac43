"""The `builtin` engine: a deterministic test double for chat, FIM and embeddings."""

from maestrale.engines.builtin.chat import BuiltinEngine

__all__ = ["BuiltinEngine", "create_engine"]


def create_engine(spec: object) -> BuiltinEngine:
    """Factory of the engine registry: one stateless engine serves every builtin model."""
    return BuiltinEngine()
