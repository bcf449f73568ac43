"""`BuiltinSpeechEngine`: the deterministic speech test double behind the `maestrale-echo-speech`
model. It speaks no words: each sentence becomes a pure tone, so that the speech API, voices and
audio sessions can be tested instantly, with no model.

Its contract, which tests rely on:
- The text is cut into sentences (`speech_text.sentences`); each yields one chunk of mono 16-bit
  PCM at 16 kHz: a sine tone of `SECONDS_PER_CHAR` seconds per character of the sentence (at
  least `MIN_SECONDS`), divided by `speed`.
- The tone's pitch is the voice's (`VOICES`: "echo-low" 220 Hz, the default, and "echo-high"
  440 Hz); with a reference sample (it clones: `clones` is true) the pitch is derived from the
  sample's bytes, so the same sample always gives the same tone and another sample another one.
- Directive lines, as the echo chat model's, are not spoken: `/sleep MS` waits MS milliseconds
  before each chunk (a slow engine, for barge-in tests); `/fail STATUS` fails the call as an
  upstream would with that status, before any audio. An unknown voice is a 400.
"""

from __future__ import annotations

import asyncio
import math
import struct
import zlib
from collections.abc import AsyncIterator

from maestrale.engines.builtin.directives import parse_directives
from maestrale.engines.speech_text import sentences
from maestrale.engines.speech_types import EngineVoice, SpeechChunk, SpeechRequest
from maestrale.engines.types import EngineError

__all__ = ["BuiltinSpeechEngine", "create_engine"]

SAMPLE_RATE = 16_000
SECONDS_PER_CHAR = 0.05
MIN_SECONDS = 0.2
AMPLITUDE = 0.3
# Voice id → (its description, the tone's frequency in Hz).
VOICES: dict[str, tuple[EngineVoice, float]] = {
    "echo-low": (
        EngineVoice("echo-low", "Echo low tone (test double)", ("en",), "neutral", "220 Hz tone"),
        220.0,
    ),
    "echo-high": (
        EngineVoice("echo-high", "Echo high tone (test double)", ("en",), "neutral", "440 Hz tone"),
        440.0,
    ),
}


def tone(frequency: float, seconds: float) -> bytes:
    """`seconds` of a sine at (about) `frequency` Hz: one period repeated, whole periods only."""
    period = max(2, round(SAMPLE_RATE / frequency))
    wave = [round(AMPLITUDE * 32767 * math.sin(2 * math.pi * i / period)) for i in range(period)]
    one = struct.pack(f"<{period}h", *wave)
    return one * max(1, round(seconds * SAMPLE_RATE / period))


def reference_frequency(reference: bytes) -> float:
    """The pitch of a custom voice: 110-549 Hz, from its sample's bytes."""
    return 110.0 + zlib.crc32(reference) % 440


class BuiltinSpeechEngine:
    """Speaks a tone per sentence; see the module's docstring."""

    clones = True

    def voices(self, model: str) -> list[EngineVoice]:
        """ "echo-low" (the default) and "echo-high"."""
        return [voice for voice, _ in VOICES.values()]

    async def synthesize(self, request: SpeechRequest) -> AsyncIterator[SpeechChunk]:
        """A tone per sentence, after the `/sleep` delay of each."""
        name = request.voice or "echo-low"
        if name not in VOICES:
            raise EngineError(
                400,
                f"model {request.model} has no voice {name!r} (voices: {', '.join(VOICES)})",
                code="unknown_voice",
            )
        if request.reference is not None:
            frequency = reference_frequency(request.reference)
        else:
            frequency = VOICES[name][1]
        directives = parse_directives(request.text)
        if directives.fail_status is not None:
            raise EngineError(
                directives.fail_status,
                f"builtin speech engine failed with status {directives.fail_status} (/fail)",
                code="upstream_error",
            )
        speed = request.speed if request.speed > 0 else 1.0
        for sentence in sentences(directives.text):
            if directives.sleep_ms:
                await asyncio.sleep(directives.sleep_ms / 1000)
            seconds = max(MIN_SECONDS, SECONDS_PER_CHAR * len(sentence)) / speed
            yield SpeechChunk(tone(frequency, seconds), SAMPLE_RATE)


def create_engine(spec: object) -> BuiltinSpeechEngine:
    """Factory of the engine registry: one stateless engine serves every builtin speech model."""
    return BuiltinSpeechEngine()
