"""The `pocketsphinx` engine: light, English-only speech transcription in process with
pocketsphinx ([audio] extra) and the US English model its wheel ships.

Far less accurate than Whisper (see `bench/audio/run.py`), but small (≈40 MB installed) and quick
to load. Catalog options (`[models.options]`), all optional:
- `pause_seconds`: a silence at least this long ends a segment (default 0.5).
- `max_queue`: requests that may wait behind the running one (default 8).

Behaviour: the whole audio is decoded as one utterance on the engine's worker thread; words come
with their times (10 ms frames) and are grouped into segments at pauses. `language` other than
English is refused with 400; `temperature` and `context_bias` have no meaning for this decoder
and are ignored; `diarize` is accepted, with `speaker_id` null. Usage reports the audio seconds.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from maestrale.engines.local import audio_decode, engine_options, require
from maestrale.engines.local.worker import Emit, SerialWorker
from maestrale.engines.specs import ModelSpec
from maestrale.engines.transcription_types import (
    LanguageDetected,
    Segment,
    TranscriptionEvent,
    TranscriptionRequest,
    TranscriptionResult,
    Word,
)
from maestrale.engines.types import EngineError, Usage

__all__ = ["SphinxEngine", "SphinxOptions", "create_engine"]

require("pocketsphinx")

_ALTERNATE = re.compile(r"\(\d+\)$")  # "read(2)": the second pronunciation of "read"


class SphinxOptions(BaseModel):
    """`options` of a `pocketsphinx` catalog entry."""

    model_config = ConfigDict(extra="forbid")

    pause_seconds: float = Field(default=0.5, gt=0)
    max_queue: int = Field(default=8, ge=0)


def _words(decoder: Any) -> list[Word | None]:
    """The recognised words with their times; None where a pause (silence, noise) was heard."""
    frames = float(decoder.config["frate"])
    out: list[Word | None] = []
    for seg in decoder.seg():
        token = seg.word
        if token.startswith(("<", "[")) or not token:
            out.append(None)
            continue
        word = _ALTERNATE.sub("", token)
        out.append(Word(word, round(seg.start_frame / frames, 3), round(seg.end_frame / frames, 3)))
    return out


def group(words: list[Word | None], pause: float) -> list[Segment]:
    """Words grouped into segments, split at gaps or pauses of at least `pause` seconds."""
    segments: list[Segment] = []
    current: list[Word] = []
    gap_start: float | None = None
    for word in words:
        if word is None:
            if current and gap_start is None:
                gap_start = current[-1].end
            continue
        if (
            current
            and word.start - (gap_start if gap_start is not None else current[-1].end) >= pause
        ):
            segments.append(_segment(current))
            current = []
        gap_start = None
        current.append(word)
    if current:
        segments.append(_segment(current))
    return segments


def _segment(words: list[Word]) -> Segment:
    return Segment(
        text=" ".join(word.text for word in words),
        start=words[0].start,
        end=words[-1].end,
        words=list(words),
    )


class SphinxEngine:
    """Transcription with pocketsphinx, one request at a time on a worker thread."""

    def __init__(self, options: SphinxOptions) -> None:
        self._options = options
        self._decoder: Any = None  # touched on the worker thread only
        self._worker: SerialWorker[TranscriptionEvent] = SerialWorker(
            "pocketsphinx", options.max_queue
        )

    def _loaded(self) -> Any:
        if self._decoder is None:
            from pocketsphinx import Decoder  # imported with the first request

            try:
                self._decoder = Decoder(samprate=audio_decode.SAMPLE_RATE, loglevel="FATAL")
            except (OSError, RuntimeError, ValueError) as exc:
                raise EngineError(
                    503, f"pocketsphinx cannot load its model: {exc}", code="engine_unavailable"
                ) from exc
        return self._decoder

    @staticmethod
    def _check(request: TranscriptionRequest) -> None:
        language = (request.language or "").strip().lower()
        if language not in ("", "en"):
            raise EngineError(
                400,
                f"model {request.model} transcribes English only, not {request.language!r}",
                code="unsupported_language",
            )

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        """Transcribe the whole audio; segments split at pauses, with word times."""
        self._check(request)
        audio = await asyncio.to_thread(audio_decode.decode, request.audio, request.max_seconds)
        events: list[TranscriptionEvent] = []
        await self._worker.run(lambda cancel: self._run(audio, events.append, cancel))
        result = events[-1]
        assert isinstance(result, TranscriptionResult)
        return result

    async def transcribe_stream(
        self, request: TranscriptionRequest
    ) -> AsyncIterator[TranscriptionEvent]:
        """The language, the segments once the utterance is decoded, then the result."""
        self._check(request)
        audio = await asyncio.to_thread(audio_decode.decode, request.audio, request.max_seconds)
        async for event in self._worker.stream(lambda emit, cancel: self._run(audio, emit, cancel)):
            yield event

    def _run(
        self,
        audio: audio_decode.DecodedAudio,
        emit: Emit[TranscriptionEvent],
        cancel: threading.Event,
    ) -> None:
        decoder = self._loaded()
        try:
            decoder.start_utt()
            decoder.process_raw(audio.pcm16(), no_search=False, full_utt=True)
            decoder.end_utt()
        except (RuntimeError, ValueError) as exc:
            raise EngineError(500, f"pocketsphinx failed: {exc}", code="engine_error") from exc
        if cancel.is_set():
            return
        segments = group(_words(decoder), self._options.pause_seconds)
        emit(LanguageDetected("en"))
        for segment in segments:
            emit(segment)
        emit(
            TranscriptionResult(
                text=" ".join(segment.text for segment in segments),
                language="en",
                segments=segments,
                audio_seconds=audio.seconds,
                usage=Usage(),
            )
        )

    async def aclose(self) -> None:
        """Refuse new requests and let the decoder be freed."""
        await self._worker.aclose()
        self._decoder = None


def create_engine(spec: ModelSpec) -> SphinxEngine:
    """Factory of the engine registry: check the options (`CatalogError`)."""
    options = engine_options(SphinxOptions, spec)
    return SphinxEngine(options)
