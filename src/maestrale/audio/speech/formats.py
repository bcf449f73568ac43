"""The output formats of speech and the encoder of each: the engine's mono s16le PCM chunks in,
the bytes of the format out, chunk by chunk, so that a stream sends each sentence as soon as it
is encoded and the bytes of all chunks joined are one valid file.

- `pcm`: raw mono samples at 24 kHz, 32-bit float little-endian for the platform (its SDK
  documents pcm as f32le; its voices speak at 24 kHz), 16-bit signed for OpenAI's clients
  (their documented pcm). No header: the client must know the rate, hence a fixed one.
- `wav`: 16-bit PCM at the engine's rate, the header first with the data sizes unknown
  (0xFFFFFFFF, as streaming servers write it: players read to the end).
- `mp3` (libmp3lame), `flac`, `opus` (libopus in Ogg) and `aac` (ADTS) through PyAV, into a
  write-only sink: the muxers do not seek back, and what they wrote is taken after each chunk.

The encoders (codecs.py) import PyAV and NumPy, which a serving process loads only once it
speaks. CPU work: `feed` and `finish` are called off the event loop (`asyncio.to_thread`).
"""

from __future__ import annotations

from typing import Literal, Protocol

from maestrale.engines.speech_types import SpeechChunk

FormatName = Literal["pcm", "wav", "mp3", "flac", "opus", "aac"]
FORMATS: tuple[FormatName, ...] = ("pcm", "wav", "mp3", "flac", "opus", "aac")
PCM_RATE = 24_000

CONTENT_TYPES: dict[str, str] = {
    "pcm": "audio/pcm",
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "flac": "audio/flac",
    "opus": "audio/ogg",
    "aac": "audio/aac",
}


class Encoder(Protocol):
    def feed(self, chunk: SpeechChunk) -> bytes:
        """The bytes `chunk` adds to the output (possibly none yet: the codec buffers)."""
        ...

    def finish(self) -> bytes:
        """The last bytes (what the codec held back, the trailer); the encoder is closed."""
        ...

    def close(self) -> None:
        """Free the encoder without finishing (an abandoned stream)."""
        ...


def encoder(name: str, *, openai: bool = False) -> Encoder:
    """The encoder of output format `name` (one of FORMATS); `openai` picks OpenAI's pcm."""
    from maestrale.audio.speech.codecs import CODECS, CodecEncoder, RawPcmEncoder, WavEncoder

    if name == "pcm":
        return RawPcmEncoder("s16" if openai else "flt")
    if name == "wav":
        return WavEncoder()
    return CodecEncoder(CODECS[name])
