"""Engine-level types of speech synthesis.

An engine speaks text in one of its own voices (or, where it can clone, in the voice of a
reference sample) and yields mono 16-bit PCM, a chunk per sentence as soon as it is
synthesized: the API encodes it (WAV, MP3, FLAC, Opus, raw PCM) and streams it, so every
engine, local or upstream, is encoded and accounted the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from maestrale.engines.types import Usage


@dataclass(frozen=True, slots=True)
class EngineVoice:
    """A voice an engine ships (a preset voice of the platform's voice list)."""

    id: str  # the engine's own name for it, e.g. "en_US-joe-medium" or "en-us"
    name: str
    languages: tuple[str, ...] = ("en",)
    gender: str | None = None  # "female", "male", "neutral"
    description: str | None = None


@dataclass(slots=True)
class SpeechRequest:
    """One synthesis as an engine sees it (model already resolved)."""

    model: str
    text: str
    # One of the engine's `voices()` ids; None for the engine's default voice.
    voice: str | None = None
    # The audio sample of a custom voice (any container PyAV reads), for engines that clone
    # (`clones` true); the API refuses it for the others before calling them.
    reference: bytes | None = None
    speed: float = 1.0


@dataclass(slots=True)
class SpeechChunk:
    """Mono signed 16-bit little-endian PCM at `sample_rate` Hz."""

    pcm: bytes
    sample_rate: int

    @property
    def seconds(self) -> float:
        return len(self.pcm) / (2 * self.sample_rate)


@dataclass(slots=True)
class SpeechUsage:
    """What a finished synthesis reports: the characters spoken, the audio's seconds, and tokens
    where the engine counts them (an upstream's usage)."""

    characters: int = 0
    audio_seconds: float = 0.0
    usage: Usage = field(default_factory=Usage)
