"""Audio bytes → 16 kHz mono float32 samples, through PyAV (FFmpeg), for the local speech engines.

The container is recognised from its first bytes (WAV, MP3, Ogg, FLAC, MP4/M4A, Matroska/WebM,
AIFF, ADTS AAC) and opened with that demuxer only: FFmpeg's own probing would also accept
playlists and other formats that open further files or URLs by themselves, which a server
decoding untrusted uploads must not do. Anything else, or a file that does not decode, is a 400;
audio longer than the request's limit is a 413, found while decoding so that a small file that
expands to hours of silence is stopped early.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import av
import numpy as np

from maestrale.engines.types import EngineError

SAMPLE_RATE = 16_000
# Containers PyAV is asked to open, by the signature at the start of the file.
_FORMATS = {
    b"fLaC": "flac",
    b"OggS": "ogg",
    b"\x1aE\xdf\xa3": "matroska",
}


@dataclass(frozen=True, slots=True)
class DecodedAudio:
    samples: np.ndarray  # float32, mono, SAMPLE_RATE Hz, in [-1, 1]

    @property
    def seconds(self) -> float:
        return len(self.samples) / SAMPLE_RATE

    def pcm16(self) -> bytes:
        """The samples as signed 16-bit little-endian PCM (what pocketsphinx reads)."""
        clipped = np.clip(self.samples, -1.0, 1.0)
        pcm: bytes = (clipped * 32767.0).astype("<i2").tobytes()
        return pcm


def undecodable(message: str) -> EngineError:
    return EngineError(400, message, code="invalid_audio")


def too_long(limit: float) -> EngineError:
    return EngineError(
        413, f"the audio is longer than the limit of {limit:g} seconds", code="audio_too_long"
    )


def sniff_format(data: bytes) -> str | None:
    """The FFmpeg demuxer for `data`, from its signature; None for an unknown container."""
    head = data[:12]
    if head[:4] in _FORMATS:
        return _FORMATS[head[:4]]
    if head[:4] in (b"RIFF", b"RF64") and head[8:12] == b"WAVE":
        return "wav"
    if head[:4] == b"FORM" and head[8:12] in (b"AIFF", b"AIFC"):
        return "aiff"
    if head[4:8] == b"ftyp":
        return "mp4"  # the mov/mp4/m4a demuxer
    if head[:3] == b"ID3":
        return "mp3"
    if len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0:
        # An MPEG audio frame header: layer bits 00 mean ADTS AAC, anything else MP1/2/3.
        return "aac" if (head[1] >> 1) & 0b11 == 0 else "mp3"
    return None


def decode(data: bytes, max_seconds: float) -> DecodedAudio:
    """Decode `data` to 16 kHz mono float32; `EngineError` 400 if it cannot, 413 if too long.

    CPU-bound: call it off the event loop."""
    container_format = sniff_format(data)
    if container_format is None:
        raise undecodable(
            "the file is not audio in a supported format (wav, mp3, ogg, flac, m4a, webm, aiff)"
        )
    limit = int(max_seconds * SAMPLE_RATE)
    parts: list[np.ndarray] = []
    total = 0
    try:
        with av.open(io.BytesIO(data), mode="r", format=container_format) as container:
            if not container.streams.audio:
                raise undecodable("the file has no audio stream")
            stream = container.streams.audio[0]
            resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    parts.append(out.to_ndarray().reshape(-1))
                    total += out.samples
                if total > limit:
                    raise too_long(max_seconds)
            for out in resampler.resample(None):
                parts.append(out.to_ndarray().reshape(-1))
                total += out.samples
    except EngineError:
        raise
    except (av.FFmpegError, ValueError, OSError, EOFError) as exc:
        raise undecodable(f"the audio cannot be decoded ({container_format}): {exc}") from exc
    if total > limit:
        raise too_long(max_seconds)
    if total == 0:
        raise undecodable("the file holds no audio samples")
    samples = np.concatenate(parts).astype(np.float32, copy=False)
    return DecodedAudio(samples)
