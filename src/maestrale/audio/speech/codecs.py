"""The encoders of the speech formats (see formats.py), on PyAV and NumPy."""

from __future__ import annotations

import contextlib
import struct
import threading
from dataclasses import dataclass
from typing import Literal

import av
import numpy as np

from maestrale.audio.speech.formats import PCM_RATE
from maestrale.engines.speech_types import SpeechChunk


@dataclass(frozen=True, slots=True)
class Codec:
    container: str
    codec: str
    # The sample rates the encoder takes; another engine rate is resampled to 24 kHz.
    rates: frozenset[int]


_COMMON = frozenset((8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000))
CODECS: dict[str, Codec] = {
    "mp3": Codec("mp3", "libmp3lame", _COMMON),
    "flac": Codec("flac", "flac", frozenset(range(1, 655_351))),
    "opus": Codec("ogg", "libopus", frozenset((8000, 12000, 16000, 24000, 48000))),
    "aac": Codec("adts", "aac", _COMMON),
}


class _Resampler:
    """Mono s16 chunks → frames of `layout_format` at `rate`; a new resampler when the engine's
    rate changes (PyAV's is fixed to its first frame's)."""

    def __init__(self, sample_format: str, rate: int) -> None:
        self.format = sample_format
        self.rate = rate
        self._source_rate: int | None = None
        self._resampler: av.AudioResampler | None = None

    def frames(self, chunk: SpeechChunk | None) -> list[av.AudioFrame]:
        out: list[av.AudioFrame] = []
        if chunk is not None and chunk.sample_rate != self._source_rate:
            out += self._drain()
            self._source_rate = chunk.sample_rate
            self._resampler = av.AudioResampler(format=self.format, layout="mono", rate=self.rate)
        if chunk is None:
            return out + self._drain()
        assert self._resampler is not None
        samples = np.frombuffer(chunk.pcm[: len(chunk.pcm) // 2 * 2], dtype="<i2")
        if samples.size == 0:
            return out
        frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = chunk.sample_rate
        return out + list(self._resampler.resample(frame))

    def _drain(self) -> list[av.AudioFrame]:
        if self._resampler is None:
            return []
        frames = list(self._resampler.resample(None))
        self._resampler = None
        return frames


def _frame_bytes(frames: list[av.AudioFrame]) -> bytes:
    return b"".join(
        bytes(frame.planes[0])[: frame.samples * frame.format.bytes] for frame in frames
    )


class RawPcmEncoder:
    """Headerless mono samples at 24 kHz: f32le (`flt`) or s16le (`s16`)."""

    def __init__(self, sample_format: Literal["flt", "s16"]) -> None:
        self._resampler = _Resampler(sample_format, PCM_RATE)

    def feed(self, chunk: SpeechChunk) -> bytes:
        return _frame_bytes(self._resampler.frames(chunk))

    def finish(self) -> bytes:
        return _frame_bytes(self._resampler.frames(None))

    def close(self) -> None:
        pass


def wav_header(sample_rate: int) -> bytes:
    """A canonical 44-byte header of mono 16-bit PCM whose sizes are unknown (0xFFFFFFFF)."""
    unknown = 0xFFFFFFFF
    return (
        b"RIFF"
        + struct.pack("<I", unknown)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16)
        + b"data"
        + struct.pack("<I", unknown)
    )


class WavEncoder:
    """The header at the engine's first rate, then its samples (resampled if the rate changes)."""

    def __init__(self) -> None:
        self._rate: int | None = None
        self._resampler: _Resampler | None = None

    def feed(self, chunk: SpeechChunk) -> bytes:
        header = b""
        if self._rate is None:
            self._rate = chunk.sample_rate
            header = wav_header(chunk.sample_rate)
        if self._resampler is None and chunk.sample_rate == self._rate:
            return header + chunk.pcm[: len(chunk.pcm) // 2 * 2]
        if self._resampler is None:
            self._resampler = _Resampler("s16", self._rate)
        return header + _frame_bytes(self._resampler.frames(chunk))

    def finish(self) -> bytes:
        if self._rate is None:  # no audio at all: still a valid, empty file
            return wav_header(PCM_RATE)
        return b"" if self._resampler is None else _frame_bytes(self._resampler.frames(None))

    def close(self) -> None:
        pass


class _Sink:
    """A write-only file for PyAV: no `seek`, so the muxers write straight through."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        return out


class CodecEncoder:
    """mp3, flac, opus (Ogg) and aac (ADTS) through PyAV, opened at the first chunk's rate (or
    24 kHz where the codec does not take it)."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self._sink = _Sink()
        self._container: av.container.OutputContainer | None = None
        self._stream: av.AudioStream | None = None
        self._resampler: _Resampler | None = None
        # `close` may come from the event loop while a thread still encodes (a cancelled
        # stream): it waits for that chunk, never frees the codec under it.
        self._lock = threading.Lock()

    def _open(self, sample_rate: int) -> None:
        rate = sample_rate if sample_rate in self.codec.rates else PCM_RATE
        # Ogg pages of at most 100 ms: each sentence leaves the muxer when it is encoded.
        options = {"page_duration": "100000"} if self.codec.container == "ogg" else {}
        container = av.open(self._sink, "w", format=self.codec.container, options=options)
        stream = container.add_stream(self.codec.codec, rate=rate, layout="mono")
        assert isinstance(stream, av.AudioStream)
        self._container, self._stream = container, stream
        sample_format = stream.codec_context.format
        self._resampler = _Resampler(sample_format.name if sample_format else "s16", rate)

    def _encode(self, frames: list[av.AudioFrame | None]) -> None:
        assert self._container is not None and self._stream is not None
        for frame in frames:
            for packet in self._stream.encode(frame):
                self._container.mux(packet)

    def feed(self, chunk: SpeechChunk) -> bytes:
        with self._lock:
            if self._container is None:
                self._open(chunk.sample_rate)
            assert self._resampler is not None
            self._encode(list(self._resampler.frames(chunk)))
            return self._sink.take()

    def finish(self) -> bytes:
        with self._lock:
            if self._container is None:
                self._open(PCM_RATE)
            assert self._resampler is not None and self._container is not None
            self._encode([*self._resampler.frames(None), None])
            self._container.close()
            self._container = None
            return self._sink.take()

    def close(self) -> None:
        with self._lock:
            if self._container is not None:
                # A half-written stream: nothing to keep.
                with contextlib.suppress(av.FFmpegError, ValueError):
                    self._container.close()
                self._container = None
