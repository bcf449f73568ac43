"""The `builtin` engine: a deterministic test double for chat, FIM and embeddings."""

from maestrale.engines.builtin.chat import BuiltinEngine

__all__ = ["BuiltinEngine"]
