"""Energy-based voice activity detection on mono s16le PCM: the start of speech (voiced frames
for `start_ms` in a row) and the end of a user's turn (unvoiced frames for `silence_ms` once
speech started). Audio time, not wall time: a client may send faster than real time.

A frame is voiced when its RMS level (0 to 1 of full scale) reaches `level`. The SDK's turn
detection knobs map onto it: `start_threshold` (0-1, default 0.5) scales the level
(`level = 0.04 * start_threshold`: 0.02, about -34 dBFS, by default) and `min_silence_ms` is the
silence that ends a turn."""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from math import sqrt

FRAME_MS = 20
LEVEL_PER_THRESHOLD = 0.04
DEFAULT_START_THRESHOLD = 0.5
DEFAULT_START_MS = 200
DEFAULT_SILENCE_MS = 600


@dataclass(frozen=True, slots=True)
class VadSettings:
    level: float = LEVEL_PER_THRESHOLD * DEFAULT_START_THRESHOLD
    start_ms: int = DEFAULT_START_MS
    silence_ms: int = DEFAULT_SILENCE_MS

    @classmethod
    def of(cls, turn_detection: dict[str, object] | None) -> VadSettings:
        knobs = turn_detection or {}
        threshold = knobs.get("start_threshold")
        silence = knobs.get("min_silence_ms")
        return cls(
            level=LEVEL_PER_THRESHOLD
            * (float(threshold) if isinstance(threshold, int | float) else DEFAULT_START_THRESHOLD),
            silence_ms=int(silence)
            if isinstance(silence, int) and silence > 0
            else DEFAULT_SILENCE_MS,
        )


def frame_level(frame: bytes) -> float:
    samples = array("h")
    samples.frombytes(frame[: len(frame) - len(frame) % 2])
    if not samples:
        return 0.0
    return sqrt(sum(s * s for s in samples) / len(samples)) / 32768.0


class Vad:
    """Feed PCM; read `started` (speech began in what was fed: `start_ms` voiced in a row) and
    `ended` (a turn's silence elapsed after speech)."""

    def __init__(self, settings: VadSettings, sample_rate: int = 16_000) -> None:
        self.settings = settings
        self.frame_bytes = sample_rate * FRAME_MS // 1000 * 2
        self._pending = b""
        self.voiced_run = 0  # ms of voiced frames in a row
        self.silent_run = 0  # ms of unvoiced frames in a row
        self.speaking = False  # speech started and its turn has not ended

    def reset(self) -> None:
        self.voiced_run = self.silent_run = 0
        self.speaking = False

    def feed(self, pcm: bytes) -> tuple[bool, bool]:
        """(speech started, turn ended) within `pcm`."""
        started = ended = False
        data = self._pending + pcm
        whole = len(data) - len(data) % self.frame_bytes
        self._pending = data[whole:]
        for at in range(0, whole, self.frame_bytes):
            voiced = frame_level(data[at : at + self.frame_bytes]) >= self.settings.level
            if voiced:
                self.voiced_run += FRAME_MS
                self.silent_run = 0
                if not self.speaking and self.voiced_run >= self.settings.start_ms:
                    self.speaking = started = True
            else:
                self.voiced_run = 0
                self.silent_run += FRAME_MS
                if self.speaking and self.silent_run >= self.settings.silence_ms:
                    self.speaking = False
                    ended = True
        return started, ended
