"""Raw PCM chunks (a realtime transcription's input, in any of the platform's encodings and
sample rates) → 16 kHz mono float32 samples, chunk by chunk: a sample split between two chunks
is kept for the next one, and resampling (PyAV's, which keeps its filter state between chunks)
leaves no seams at chunk boundaries."""

from __future__ import annotations

from functools import cache
from types import MappingProxyType

import av
import numpy as np

from maestrale.engines.local.audio_decode import SAMPLE_RATE
from maestrale.engines.transcription_types import PCM_ENCODINGS, PcmFormat

_NUMERIC = MappingProxyType(
    {
        "pcm_s16le": ("<i2", 1 / 32768),
        "pcm_s32le": ("<i4", 1 / 2147483648),
        "pcm_f16le": ("<f2", 1.0),
        "pcm_f32le": ("<f4", 1.0),
    }
)


@cache
def _g711_table(encoding: str) -> np.ndarray:
    """The float32 value of each of the 256 G.711 (mu-law or A-law) codes."""
    codes = np.arange(256, dtype=np.int32)
    if encoding == "pcm_mulaw":
        u = ~codes & 0xFF
        magnitude = (((u & 0x0F) << 3) + 0x84 << ((u >> 4) & 0x07)) - 0x84
        values = np.where(u & 0x80, -magnitude, magnitude)
    else:
        a = codes ^ 0x55
        exponent = (a >> 4) & 0x07
        mantissa = (a & 0x0F) << 4
        magnitude = np.where(
            exponent == 0, mantissa + 8, (mantissa + 0x108) << np.maximum(exponent - 1, 0)
        )
        values = np.where(a & 0x80, magnitude, -magnitude)
    table = (values / 32768).astype(np.float32)
    table.setflags(write=False)
    return table


def to_float(data: bytes, encoding: str) -> np.ndarray:
    """Whole samples of `encoding` as float32 in [-1, 1] (NaN and infinities of float input
    become silence and full scale)."""
    if encoding in ("pcm_mulaw", "pcm_alaw"):
        return _g711_table(encoding)[np.frombuffer(data, dtype=np.uint8)]
    dtype, scale = _NUMERIC[encoding]
    samples = np.frombuffer(data, dtype=dtype).astype(np.float32) * np.float32(scale)
    if encoding in ("pcm_f16le", "pcm_f32le"):
        samples = np.clip(np.nan_to_num(samples, posinf=1.0, neginf=-1.0), -1.0, 1.0)
    return samples


class PcmDecoder:
    """Decodes one stream of PCM chunks of `audio_format` to 16 kHz mono float32."""

    def __init__(self, audio_format: PcmFormat) -> None:
        self.format = audio_format
        self._width = PCM_ENCODINGS[audio_format.encoding]
        self._rest = b""
        self._resampler = (
            None
            if audio_format.sample_rate == SAMPLE_RATE
            else av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        )

    def feed(self, chunk: bytes) -> np.ndarray:
        """The samples of `chunk` (and of what the previous chunk left over)."""
        data = self._rest + chunk
        whole = len(data) - len(data) % self._width
        self._rest = data[whole:]
        return self._resample(to_float(data[:whole], self.format.encoding))

    def end(self) -> np.ndarray:
        """What the resampler still holds once the audio has ended (a partial sample is
        dropped)."""
        self._rest = b""
        return self._resample(None)

    def _resample(self, samples: np.ndarray | None) -> np.ndarray:
        if self._resampler is None:
            return samples if samples is not None else np.zeros(0, dtype=np.float32)
        frame = None
        if samples is not None:
            if not len(samples):
                return samples
            frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="flt", layout="mono")
            frame.sample_rate = self.format.sample_rate
        parts = [out.to_ndarray().reshape(-1) for out in self._resampler.resample(frame)]
        if not parts:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(parts).astype(np.float32, copy=False)
