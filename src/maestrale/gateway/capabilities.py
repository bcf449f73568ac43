"""What a model call asks of its model: a capability listed in the catalog, served by an engine
that implements the capability's Protocol. Opening a call with a capability types its engine."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Generic, TypeVar, cast

from maestrale.engines.protocols import (
    ChatEngine,
    ClassificationEngine,
    EmbeddingsEngine,
    FimEngine,
    ModerationEngine,
    OcrEngine,
    RealtimeTranscriptionEngine,
    SpeechEngine,
    TextCompletionEngine,
    TranscriptionEngine,
)

E_co = TypeVar("E_co", covariant=True)


@dataclass(frozen=True, slots=True)
class Capability(Generic[E_co]):
    """A kind of model call: the endpoint it is accounted under, the capability its model must
    list in the catalog, and the engine Protocol (`E_co`) its engine must implement."""

    endpoint: str
    catalog_name: str
    # A runtime-checkable Protocol: typed `type`, as a Protocol is not a concrete `type[E_co]`.
    protocol: type
    what: str  # for error messages

    def engine_of(self, engine: object) -> E_co | None:
        """`engine` as the capability's Protocol, or None when it does not implement it."""
        return cast(E_co, engine) if isinstance(engine, self.protocol) else None


CHAT: Final[Capability[ChatEngine]] = Capability(
    "chat", "completion_chat", ChatEngine, "chat completions"
)
FIM: Final[Capability[FimEngine]] = Capability(
    "fim", "completion_fim", FimEngine, "fill-in-the-middle completions"
)
# A chat model's raw text completion (the legacy /v1/completions): accounted and limited as chat.
TEXT: Final[Capability[TextCompletionEngine]] = Capability(
    "chat", "completion_chat", TextCompletionEngine, "text completions (/v1/completions)"
)
EMBEDDINGS: Final[Capability[EmbeddingsEngine]] = Capability(
    "embeddings", "embeddings", EmbeddingsEngine, "embeddings"
)
MODERATIONS: Final[Capability[ModerationEngine]] = Capability(
    "moderations", "moderation", ModerationEngine, "moderation"
)
CLASSIFICATIONS: Final[Capability[ClassificationEngine]] = Capability(
    "classifications", "classification", ClassificationEngine, "classification"
)
OCR: Final[Capability[OcrEngine]] = Capability("ocr", "ocr", OcrEngine, "OCR")
TRANSCRIPTION: Final[Capability[TranscriptionEngine]] = Capability(
    "audio_transcriptions", "audio_transcription", TranscriptionEngine, "audio transcription"
)
# Accounted and limited under the same endpoint as a transcription of a file.
TRANSCRIPTION_REALTIME: Final[Capability[RealtimeTranscriptionEngine]] = Capability(
    "audio_transcriptions",
    "audio_transcription_realtime",
    RealtimeTranscriptionEngine,
    "realtime audio transcription",
)
SPEECH: Final[Capability[SpeechEngine]] = Capability(
    "audio_speech", "audio_speech", SpeechEngine, "speech synthesis"
)

# By endpoint name (the `endpoint` of usage records and limits).
CAPABILITIES: Mapping[str, Capability[object]] = MappingProxyType(
    {
        c.endpoint: c
        for c in (CHAT, FIM, EMBEDDINGS, MODERATIONS, CLASSIFICATIONS, OCR, TRANSCRIPTION, SPEECH)
    }
)
