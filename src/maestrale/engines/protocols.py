"""One small Protocol per engine capability.

The gateway resolves a model from the catalog to an engine object and checks, with
`isinstance(engine, ChatEngine)` and friends, that the engine offers the capability asked for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from maestrale.engines.moderation_types import (
    ClassificationRequest,
    ClassificationResult,
    ModerationRequest,
    ModerationResult,
)
from maestrale.engines.ocr_types import OcrImage, OcrLine
from maestrale.engines.speech_types import EngineVoice, SpeechChunk, SpeechRequest
from maestrale.engines.transcription_types import (
    RealtimeTranscriptionRequest,
    TranscriptionEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from maestrale.engines.types import (
    ChatChunk,
    ChatRequest,
    ChatResult,
    EmbeddingRequest,
    EmbeddingResult,
    FimRequest,
    TextRequest,
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
class FormatChecker(Protocol):
    """A chat engine that enforces `response_format` in a way some formats cannot take (the local
    model's grammar), and says which before it is called."""

    def check_format(self, response_format: dict[str, Any]) -> None:
        """Raise `EngineError(400)` for a `response_format` this engine cannot enforce, as
        `chat` would once called; quick (no model call, no queue)."""
        ...


@runtime_checkable
class PromptCounter(Protocol):
    """A chat engine that can count a chat's prompt without running it (what
    `/v1/responses/input_tokens` answers)."""

    async def count_prompt(self, request: ChatRequest) -> int:
        """The prompt tokens of a chat of `request` (its messages and tools as the engine renders
        them, with its tool_choice, response_format...): exactly the `usage.prompt_tokens` this
        engine reports for that chat. Raise `EngineError` as `chat` does for a request it
        refuses, and `EngineError(400, code="token_count_unsupported")` when it cannot count."""
        ...


@runtime_checkable
class ChatOptions(Protocol):
    """A chat engine that honours some of the optional request fields (`types.CHAT_OPTIONS`:
    top_k, repetition_penalty, min_tokens, logprobs, prompt_logprobs). An engine without this
    method honours none: a request setting one is refused, never answered without it."""

    def chat_options(self) -> frozenset[str]:
        """The `CHAT_OPTIONS` this engine honours."""
        ...


def honoured_options(engine: object) -> frozenset[str]:
    """The `CHAT_OPTIONS` that `engine` honours (none unless it says so: `ChatOptions`)."""
    return engine.chat_options() if isinstance(engine, ChatOptions) else frozenset()


@runtime_checkable
class TextCompletionEngine(Protocol):
    """A chat model's raw completion (the legacy `/v1/completions`): the prompt continued as
    plain text, without the chat template."""

    async def complete(self, request: TextRequest) -> ChatResult:
        """Continue `request.prompt`; each choice's message content is the generated text."""
        ...

    def complete_stream(self, request: TextRequest) -> AsyncIterator[ChatChunk]:
        """Stream the continuation as deltas; the last chunk carries `usage`."""
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
class ModerationEngine(Protocol):
    async def moderate(self, request: ModerationRequest) -> ModerationResult:
        """Score each input over the moderation `CATEGORIES`; one verdict per input, in order."""
        ...


@runtime_checkable
class ClassificationEngine(Protocol):
    async def classify(self, request: ClassificationRequest) -> ClassificationResult:
        """Score each input for every target of the classifier; one result per input."""
        ...


@runtime_checkable
class OcrEngine(Protocol):
    async def recognize(self, image: OcrImage) -> list[OcrLine]:
        """Recognise the text of one image: its lines (or line fragments) with their boxes in
        the image's pixels and a confidence in [0, 1], in no particular order."""
        ...


@runtime_checkable
class OcrDocumentEngine(Protocol):
    async def process_document(self, body: dict[str, Any]) -> dict[str, Any]:
        """Run a whole `/v1/ocr` request (wire format, model already resolved) where the engine
        does it all (an upstream platform); the result is the OCR response body."""
        ...


@runtime_checkable
class TranscriptionEngine(Protocol):
    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        """Transcribe the request's audio; `EngineError` 400 (undecodable), 413 (too long)."""
        ...

    def transcribe_stream(self, request: TranscriptionRequest) -> AsyncIterator[TranscriptionEvent]:
        """Stream the transcription: `LanguageDetected` (when known), each `Segment` as it is
        decoded, and the whole `TranscriptionResult` last."""
        ...


@runtime_checkable
class RealtimeTranscriptionEngine(Protocol):
    def transcribe_realtime(
        self, request: RealtimeTranscriptionRequest
    ) -> AsyncIterator[TranscriptionEvent]:
        """Transcribe PCM audio as it arrives: `LanguageDetected` (when known), each `Segment`
        once the engine will not revise it (all of them at a FLUSH), and the whole
        `TranscriptionResult` after the audio ends; `EngineError` 413 past `max_seconds`."""
        ...


@runtime_checkable
class HearsByTranscription(Protocol):
    """A chat engine that takes no audio itself but hears it through its model's transcription:
    the chat endpoint transcribes each `input_audio` chunk with the same model (a transcription
    call of its own, limited and accounted as such) and sends the text in its place."""

    def hears_by_transcription(self) -> bool:
        """True: the marker of this Protocol."""
        ...


@runtime_checkable
class SpeechEngine(Protocol):
    # Whether `SpeechRequest.reference` (a custom voice's sample) is honoured.
    clones: bool

    def voices(self, model: str) -> list[EngineVoice]:
        """The voices the engine speaks `model` in, its default first."""
        ...

    def synthesize(self, request: SpeechRequest) -> AsyncIterator[SpeechChunk]:
        """Speak `request.text`: PCM chunks, one per sentence (or smaller) as each is ready,
        so the first is out before the whole text is spoken; raise `EngineError` on failure
        (400 for an unknown voice)."""
        ...


@runtime_checkable
class Closeable(Protocol):
    async def aclose(self) -> None:
        """Release pooled connections or loaded models at shutdown."""
        ...
