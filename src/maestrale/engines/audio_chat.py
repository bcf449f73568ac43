"""The `audio_chat` engine: a chat model of the catalog that hears audio through a transcription
model of the catalog, served under one name — what the platform's Voxtral models are (chat that
takes `input_audio`, transcription, realtime transcription), made of local parts.

```toml
[[models]]
id = "smollm2-whisper-audio"
engine = "audio_chat"
options = { chat_model = "smollm2-135m-instruct", transcription_model = "whisper-tiny-en" }
capabilities = ["completion_chat", "audio", "audio_transcription", "audio_transcription_realtime"]
```

- Chat goes to `chat_model`, transcription (plain, streamed, realtime) to `transcription_model`,
  each given its own upstream name. The entry may list only capabilities its models serve
  (checked at start-up); a named model that is not served (an optional one skipped) makes the
  entry unavailable (skipped too when it is optional).
- `input_audio` chunks: the chat endpoint transcribes each with this model before the chat
  (`HearsByTranscription`), so both calls are limited and accounted. A chat that reaches the
  engine with audio still in it (a path that does not transcribe) is refused with 400, never
  answered as if the audio were not there.
- The models are looked up by name at each call, so that an entry the registry serves
  differently later (a test's stand-in) is followed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from maestrale.engines.local import engine_options
from maestrale.engines.protocols import (
    ChatEngine,
    RealtimeTranscriptionEngine,
    TranscriptionEngine,
    honoured_options,
)
from maestrale.engines.registry import EngineUnavailable, Lookup
from maestrale.engines.specs import CatalogError, ModelSpec
from maestrale.engines.transcription_types import (
    RealtimeTranscriptionRequest,
    TranscriptionEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from maestrale.engines.types import ChatChunk, ChatRequest, ChatResult, EngineError

# Capabilities of the entry → the option naming the model that must serve them.
_SERVED_BY = MappingProxyType(
    {
        "completion_chat": "chat_model",
        "function_calling": "chat_model",
        "vision": "chat_model",
        "audio_transcription": "transcription_model",
        "audio_transcription_realtime": "transcription_model",
    }
)


class AudioChatOptions(BaseModel):
    """`options` of an `audio_chat` catalog entry."""

    model_config = ConfigDict(extra="forbid")

    chat_model: str = Field(min_length=1)
    transcription_model: str = Field(min_length=1)


def _has_audio(request: ChatRequest) -> bool:
    return any(
        isinstance(message.get("content"), list)
        and any(isinstance(c, dict) and c.get("type") == "input_audio" for c in message["content"])
        for message in request.messages
    )


class AudioChatEngine:
    """Chat on one catalog model, transcription on another (see the module's docstring)."""

    def __init__(self, options: AudioChatOptions, lookup: Lookup) -> None:
        self._options = options
        self._lookup = lookup

    def hears_by_transcription(self) -> bool:
        return True

    def _model(self, name: str, protocol: type) -> tuple[Any, str]:
        """The engine serving `name` (checked against `protocol`) and its upstream name."""
        found = self._lookup(name)
        if found is None or not isinstance(found.engine, protocol):
            raise EngineError(503, f"model {name!r} is not served", code="engine_unavailable")
        return found.engine, found.spec.upstream_model or found.spec.id

    def chat_options(self) -> frozenset[str]:
        """The optional chat fields the chat model's engine honours (none when not served)."""
        found = self._lookup(self._options.chat_model)
        return honoured_options(found.engine) if found is not None else frozenset()

    def _chat(self, request: ChatRequest) -> tuple[Any, ChatRequest]:
        if _has_audio(request):
            raise EngineError(
                400,
                "this model hears audio through transcription, which only chat completions do: "
                "send the audio to /v1/chat/completions or its transcription as text",
                code="audio_not_supported",
            )
        engine, upstream = self._model(self._options.chat_model, ChatEngine)
        return engine, replace(request, model=upstream)

    async def chat(self, request: ChatRequest) -> ChatResult:
        engine, delegated = self._chat(request)
        result: ChatResult = await engine.chat(delegated)
        return result

    def chat_stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        engine, delegated = self._chat(request)
        stream: AsyncIterator[ChatChunk] = engine.chat_stream(delegated)
        return stream

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        engine, upstream = self._model(self._options.transcription_model, TranscriptionEngine)
        result: TranscriptionResult = await engine.transcribe(replace(request, model=upstream))
        return result

    def transcribe_stream(self, request: TranscriptionRequest) -> AsyncIterator[TranscriptionEvent]:
        engine, upstream = self._model(self._options.transcription_model, TranscriptionEngine)
        stream: AsyncIterator[TranscriptionEvent] = engine.transcribe_stream(
            replace(request, model=upstream)
        )
        return stream

    def transcribe_realtime(
        self, request: RealtimeTranscriptionRequest
    ) -> AsyncIterator[TranscriptionEvent]:
        engine, upstream = self._model(
            self._options.transcription_model, RealtimeTranscriptionEngine
        )
        stream: AsyncIterator[TranscriptionEvent] = engine.transcribe_realtime(
            replace(request, model=upstream)
        )
        return stream


def create_engine(spec: ModelSpec, lookup: Lookup) -> AudioChatEngine:
    """Factory of the registry's composite engines: check the options and that the named models
    are served (`EngineUnavailable` otherwise) and serve every capability of the entry
    that is theirs (`CatalogError` otherwise)."""
    options = engine_options(AudioChatOptions, spec)
    if spec.has("audio") and not spec.has("audio_transcription"):
        raise CatalogError("an entry that hears `audio` must list `audio_transcription`")
    for capability in spec.capabilities:
        option = _SERVED_BY.get(capability)
        if option is None:
            continue
        name = getattr(options, option)
        found = lookup(name)
        if found is None:
            raise EngineUnavailable(f"model {name!r} ({option}) is not served")
        if not found.spec.has(capability):
            raise CatalogError(f"{option} {name!r} does not serve {capability}")
    return AudioChatEngine(options, lookup)
