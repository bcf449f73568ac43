"""A custom voice's sample: base64 audio of any container PyAV reads → one normalized WAV
(mono, signed 16-bit, 24 kHz, at most `KEEP_SECONDS` seconds), so that every engine that clones
gets the same format.

The container is recognised from its signature (the same rule as transcription: FFmpeg's own
probing would open playlists and other files by itself). The duration the container declares
is checked before decoding, and decoding stops as soon as the audio passes the limit, so a
2-hour sample is refused quickly; only the kept seconds are ever held in memory.
"""

from __future__ import annotations

import base64
import binascii
import io
import wave
from dataclasses import dataclass
from typing import TYPE_CHECKING

from maestrale.core.errors import BadRequest, PayloadTooLarge

if TYPE_CHECKING:
    from av.audio.stream import AudioStream
    from av.container import InputContainer

SAMPLE_RATE = 24_000
KEEP_SECONDS = 30.0
MIN_SECONDS = 2.0


class InvalidSample(BadRequest):
    code = "invalid_voice_sample"


@dataclass(frozen=True, slots=True)
class NormalizedSample:
    wav: bytes
    seconds: float  # of the original audio
    trimmed_seconds: float | None  # what was cut off the end, None when nothing was


def decode_base64(text: str, max_bytes: int) -> bytes:
    """The sample's bytes; 400 when it is not base64 or empty, 413 over `max_bytes` (checked on
    the text's length first, before decoding)."""
    if len(text) > (max_bytes + 2) // 3 * 4 + 4:
        raise too_large(max_bytes)
    try:
        data = base64.b64decode(text.strip(), validate=False)
    except (binascii.Error, ValueError) as exc:
        raise InvalidSample(f"sample_audio is not valid base64: {exc}") from exc
    if not data:
        raise InvalidSample("sample_audio is empty")
    if len(data) > max_bytes:
        raise too_large(max_bytes)
    return data


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"the voice sample exceeds the limit of {limit} bytes", code="voice_sample_too_large"
    )


def too_long(limit: float) -> InvalidSample:
    return InvalidSample(
        f"the voice sample is longer than the limit of {limit:g} seconds",
        code="voice_sample_too_long",
    )


def wav_bytes(pcm: bytes, rate: int = SAMPLE_RATE) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(pcm)
    return out.getvalue()


def normalize(data: bytes, max_seconds: float) -> NormalizedSample:
    """Decode, check and normalize a sample; `InvalidSample` (400) for what is not audio, too
    short or too long. CPU-bound: call it off the event loop."""
    # PyAV and numpy load with the first sample, not with the server.
    import av
    import numpy as np

    from maestrale.engines.local.audio_decode import sniff_format

    container_format = sniff_format(data)
    if container_format is None:
        raise InvalidSample(
            "the voice sample is not audio in a supported format "
            "(wav, mp3, ogg, flac, m4a, webm, aiff)"
        )
    keep = int(KEEP_SECONDS * SAMPLE_RATE)
    limit = int(max_seconds * SAMPLE_RATE)
    parts: list[np.ndarray] = []
    kept = 0
    total = 0
    try:
        with av.open(io.BytesIO(data), mode="r", format=container_format) as container:
            if not container.streams.audio:
                raise InvalidSample("the voice sample has no audio stream")
            stream = container.streams.audio[0]
            _check_declared(container, stream, max_seconds)
            resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    total += out.samples
                    if kept < keep:
                        chunk = out.to_ndarray().reshape(-1)[: keep - kept]
                        parts.append(chunk)
                        kept += len(chunk)
                if total > limit:
                    raise too_long(max_seconds)
            for out in resampler.resample(None):
                total += out.samples
                if kept < keep:
                    chunk = out.to_ndarray().reshape(-1)[: keep - kept]
                    parts.append(chunk)
                    kept += len(chunk)
    except InvalidSample:
        raise
    except (av.FFmpegError, ValueError, OSError, EOFError) as exc:
        raise InvalidSample(f"the voice sample cannot be decoded ({container_format})") from exc
    if total > limit:
        raise too_long(max_seconds)
    seconds = total / SAMPLE_RATE
    if seconds < MIN_SECONDS:
        raise InvalidSample(
            f"the voice sample lasts {seconds:.2f} seconds; at least {MIN_SECONDS:g} are needed",
            code="voice_sample_too_short",
        )
    pcm = np.concatenate(parts).astype("<i2", copy=False).tobytes()
    trimmed = round(seconds - kept / SAMPLE_RATE, 3) if total > kept else None
    return NormalizedSample(wav_bytes(pcm), seconds, trimmed)


def _check_declared(container: InputContainer, stream: AudioStream, limit: float) -> None:
    """Refuse from the header a sample that declares more than `limit` seconds."""
    import av

    declared: float | None = None
    if stream.duration is not None and stream.time_base is not None:
        declared = float(stream.duration * stream.time_base)
    elif container.duration is not None:
        declared = container.duration / av.time_base
    if declared is not None and declared > limit:
        raise too_long(limit)
