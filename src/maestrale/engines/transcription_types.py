"""Engine-level request, result and stream types of speech transcription.

The audio travels as the bytes the client sent (any container PyAV can read, or whatever the
upstream of a pass-through engine accepts): local engines decode it themselves, off the event loop,
within the request's duration limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
