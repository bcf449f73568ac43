"""One small Protocol per engine capability.

The gateway resolves a model from the catalog to an engine object and checks, with
`isinstance(engine, ChatEngine)` and friends, that the engine offers the capability asked for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from maestrale.engines.types import (
    ChatChunk,
    ChatRequest,
    ChatResult,
    EmbeddingRequest,
    EmbeddingResult,
    FimRequest,
)


@runtime_checkable
class ChatEngine(Protocol):
    async def chat(self, request: ChatRequest) -> ChatResult:
        """Complete a conversation; raise `EngineError` on failure."""
        ...

    def chat_stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        """Stream the completion as deltas; the last chunk carries `usage`."""
        ...


@runtime_checkable
class FimEngine(Protocol):
    async def fim(self, request: FimRequest) -> ChatResult:
        """Fill in the middle between `prompt` and `suffix`."""
        ...

    def fim_stream(self, request: FimRequest) -> AsyncIterator[ChatChunk]:
        """Stream a fill-in-the-middle completion; the last chunk carries `usage`."""
        ...


@runtime_checkable
class EmbeddingsEngine(Protocol):
    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        """Embed each input text; vectors come back in input order."""
        ...


@runtime_checkable
class Closeable(Protocol):
    async def aclose(self) -> None:
        """Release pooled connections or loaded models at shutdown."""
        ...
