"""Engine-level request, result and stream types of speech transcription.

The audio travels as the bytes the client sent (any container PyAV can read, or whatever the
upstream of a pass-through engine accepts): local engines decode it themselves, off the event loop,
within the request's duration limit. A realtime transcription gets raw PCM chunks as the client
sends them, and streams the same events as a streamed one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from maestrale.engines.types import Usage

Granularity = Literal["segment", "word"]


@dataclass(slots=True)
class TranscriptionRequest:
    """One transcription as an engine sees it (model already resolved)."""

    model: str
    audio: bytes
    filename: str = "audio"
    content_type: str | None = None
    language: str | None = None
    temperature: float | None = None
    timestamp_granularities: list[Granularity] = field(default_factory=list)
    diarize: bool = False
    context_bias: list[str] = field(default_factory=list)
    # Longer audio is refused (413) rather than transcribed for minutes.
    max_seconds: float = 3600.0


@dataclass(slots=True)
class Word:
    text: str
    start: float
    end: float
    score: float | None = None


@dataclass(slots=True)
class Segment:
    """A stretch of speech with its timing in seconds from the start of the audio."""

    text: str
    start: float
    end: float
    score: float | None = None
    speaker_id: str | None = None
    words: list[Word] = field(default_factory=list)


@dataclass(slots=True)
class LanguageDetected:
    """Streamed first, as soon as the engine knows the audio's language."""

    language: str


@dataclass(slots=True)
class TranscriptionResult:
    text: str
    language: str | None
    segments: list[Segment]
    audio_seconds: float
    usage: Usage = field(default_factory=Usage)


# What a streamed transcription yields: the language (when known), each segment as it is
# decoded, and the whole result last.
TranscriptionEvent = LanguageDetected | Segment | TranscriptionResult


# Realtime transcription: raw PCM as it arrives, in one of the platform's encodings (the SDK's
# `AudioEncoding`), with the bytes per sample of each.
PCM_ENCODINGS: Mapping[str, int] = MappingProxyType(
    {
        "pcm_s16le": 2,
        "pcm_s32le": 4,
        "pcm_f16le": 2,
        "pcm_f32le": 4,
        "pcm_mulaw": 1,
        "pcm_alaw": 1,
    }
)
MIN_SAMPLE_RATE = 8_000
MAX_SAMPLE_RATE = 96_000


@dataclass(frozen=True, slots=True)
class PcmFormat:
    """Mono PCM: one of PCM_ENCODINGS at `sample_rate` Hz."""

    encoding: str = "pcm_s16le"
    sample_rate: int = 16_000

    def seconds(self, size: int) -> float:
        """How long `size` bytes of this format play."""
        return size / (PCM_ENCODINGS[self.encoding] * self.sample_rate)


class Flush:
    """Asks a realtime transcription for the text of all the audio received so far."""


FLUSH = Flush()
# What a realtime transcription reads: PCM bytes, FLUSH, or None when the audio has ended.
RealtimeInput = bytes | Flush | None


@dataclass(slots=True)
class RealtimeTranscriptionRequest:
    """A realtime transcription as an engine sees it: `audio` is fed as the client sends it
    (the engine reads what has queued up at once, so that it transcribes the latest audio rather
    than every chunk in turn) and ends with None."""

    model: str
    audio_format: PcmFormat
    audio: asyncio.Queue[RealtimeInput]
    # How much new audio, at least, between two passes of the model (its text's delay).
    interval_seconds: float = 1.0
    language: str | None = None
    # More audio than this is refused (413), as for a file.
    max_seconds: float = 3600.0
