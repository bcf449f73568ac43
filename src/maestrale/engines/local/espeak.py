"""The `espeak` engine: formant speech synthesis by Debian's `espeak-ng` program, the fallback
that needs no Python package and no weights (`apt-get install espeak-ng`).

The text is cut into sentences (`speech_text.sentences`) and each is spoken by its own
`espeak-ng --stdin --stdout -v VOICE -s WPM` process, whose WAV output becomes one PCM chunk
(22.05 kHz mono), yielded as soon as that sentence is done. A process is killed when its
request is cancelled or runs past `timeout`. Robotic, but intelligible, tiny and fast.

Catalog options (`[models.options]`), all optional:
- `program`: the espeak-ng executable (default "espeak-ng", looked up on PATH); missing, the
  engine is unavailable (an `optional` catalog entry is skipped).
- `words_per_minute`: the rate at speed 1.0 (default 175, espeak-ng's own).
- `timeout`: seconds one sentence may take (default 30).
- `max_processes`: sentences spoken at once across requests (default 2, the cores of a small
  machine); `max_queue`: requests that may wait for one (default 16), one more gets
  `EngineError(503, code="engine_overloaded")`.

Voices: a curated handful of espeak-ng's voices (`VOICES`), US English first. It does not clone.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import struct
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pydantic import BaseModel, ConfigDict, Field

from maestrale.core.fair import FairShare
from maestrale.engines.local import engine_options
from maestrale.engines.registry import EngineUnavailable
from maestrale.engines.specs import ModelSpec
from maestrale.engines.speech_text import sentences
from maestrale.engines.speech_types import EngineVoice, SpeechChunk, SpeechRequest
from maestrale.engines.types import EngineError

__all__ = ["VOICES", "EspeakEngine", "EspeakOptions", "create_engine", "wav_pcm"]

# Our voice id → (espeak-ng voice, its description); US English, the default, first.
VOICES: dict[str, tuple[str, EngineVoice]] = {
    voice.id: (espeak, voice)
    for espeak, voice in (
        ("en-us", EngineVoice("en-us", "eSpeak NG US English", ("en",), "male")),
        ("en-us+f3", EngineVoice("en-us-f", "eSpeak NG US English (female)", ("en",), "female")),
        ("en-gb", EngineVoice("en-gb", "eSpeak NG British English", ("en",), "male")),
        ("fr-fr", EngineVoice("fr", "eSpeak NG French", ("fr",), "male")),
        ("de", EngineVoice("de", "eSpeak NG German", ("de",), "male")),
        ("es", EngineVoice("es", "eSpeak NG Spanish", ("es",), "male")),
        ("it", EngineVoice("it", "eSpeak NG Italian", ("it",), "male")),
        ("pt", EngineVoice("pt", "eSpeak NG Portuguese", ("pt",), "male")),
        ("nl", EngineVoice("nl", "eSpeak NG Dutch", ("nl",), "male")),
    )
}
MIN_WPM, MAX_WPM = 80, 500


class EspeakOptions(BaseModel):
    """`options` of an `espeak` catalog entry."""

    model_config = ConfigDict(extra="forbid")

    program: str = "espeak-ng"
    words_per_minute: int = Field(default=175, ge=MIN_WPM, le=MAX_WPM)
    timeout: float = Field(default=30.0, gt=0)
    max_processes: int = Field(default=2, ge=1, le=64)
    max_queue: int = Field(default=16, ge=0)


def wav_pcm(data: bytes) -> SpeechChunk:
    """The samples of a mono 16-bit PCM WAV file (espeak-ng's `--stdout`, whose header gives no
    true length: the data runs to the end)."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError("not a WAV file")
    pos, rate = 12, 0
    while pos + 8 <= len(data):
        kind, size = data[pos : pos + 4], int.from_bytes(data[pos + 4 : pos + 8], "little")
        body = pos + 8
        if kind == b"fmt ":
            fmt, channels, rate, _, _, bits = struct.unpack("<HHIIHH", data[body : body + 16])
            if (fmt, channels, bits) != (1, 1, 16):
                raise ValueError(f"not mono 16-bit PCM: format {fmt}, {channels} ch, {bits} bits")
        elif kind == b"data":
            if not rate:
                raise ValueError("WAV data before its format")
            end = min(body + size, len(data))
            return SpeechChunk(data[body : end - (end - body) % 2], rate)
        pos = body + size + (size & 1)
    raise ValueError("WAV file without data")


class EspeakEngine:
    """Speech by `espeak-ng` processes, a sentence per process, at most `max_processes` at once."""

    clones = False

    def __init__(self, program: str, options: EspeakOptions) -> None:
        self._program = program
        self._options = options
        self._slots = FairShare(options.max_processes)
        self._lock = threading.Lock()
        self._pending = 0

    def voices(self, model: str) -> list[EngineVoice]:
        """The curated espeak-ng voices, US English first."""
        return [voice for _, voice in VOICES.values()]

    @asynccontextmanager
    async def _admission(self) -> AsyncIterator[None]:
        with self._lock:
            if self._pending >= self._options.max_processes + self._options.max_queue:
                raise EngineError(503, "espeak-ng is busy", code="engine_overloaded")
            self._pending += 1
        try:
            yield
        finally:
            with self._lock:
                self._pending -= 1

    async def synthesize(self, request: SpeechRequest) -> AsyncIterator[SpeechChunk]:
        """Each sentence's PCM as soon as its espeak-ng process has ended."""
        name = request.voice or next(iter(VOICES))
        if name not in VOICES:
            raise EngineError(
                400,
                f"model {request.model} has no voice {name!r} (voices: {', '.join(VOICES)})",
                code="unknown_voice",
            )
        voice = VOICES[name][0]
        wpm = round(self._options.words_per_minute * request.speed)
        wpm = min(max(wpm, MIN_WPM), MAX_WPM)
        async with self._admission():
            for sentence in sentences(request.text):
                async with self._slots.slot():
                    wav = await self._speak(sentence, voice, wpm)
                try:
                    chunk = wav_pcm(wav)
                except ValueError as exc:
                    raise EngineError(
                        502, f"espeak-ng wrote no usable audio: {exc}", code="engine_error"
                    ) from exc
                if chunk.pcm:
                    yield chunk

    async def _speak(self, sentence: str, voice: str, wpm: int) -> bytes:
        try:
            process = await asyncio.create_subprocess_exec(
                self._program,
                "--stdin",
                "--stdout",
                "-v",
                voice,
                "-s",
                str(wpm),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise EngineError(
                503, f"cannot run espeak-ng: {exc}", code="engine_unavailable"
            ) from exc
        try:
            async with asyncio.timeout(self._options.timeout):
                out, err = await process.communicate(sentence.encode() + b"\n")
        except TimeoutError:
            raise EngineError(504, "espeak-ng timed out", code="engine_timeout") from None
        finally:
            if process.returncode is None:  # cancelled or timed out: no orphan left speaking
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await asyncio.shield(process.wait())
        if process.returncode != 0:
            detail = err.decode(errors="replace").strip()[:200]
            raise EngineError(500, f"espeak-ng failed: {detail}", code="engine_error")
        return out


def create_engine(spec: ModelSpec) -> EspeakEngine:
    """Factory of the engine registry; `EngineUnavailable` when espeak-ng is not installed."""
    options = engine_options(EspeakOptions, spec)
    program = shutil.which(options.program)
    if program is None:
        raise EngineUnavailable(
            f"{options.program} is not installed (Debian: apt-get install espeak-ng)"
        )
    return EspeakEngine(program, options)
