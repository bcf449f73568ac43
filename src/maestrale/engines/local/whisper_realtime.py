"""Realtime transcription on a Whisper model: the audio received so far and not yet committed (the
window) is transcribed again each time enough new audio has arrived, and the segments the model
has finished with are committed and streamed.

Whisper reads whole utterances, not a stream: a pass over the window gives its segments, the last
of which may still be cut off mid-word. Every segment but the last is final (more speech followed
it) and is committed; the window then starts where the last committed segment ended, so the next
pass reads only the audio after it. A window that grows past MAX_WINDOW_SECONDS without a second
segment is committed whole; one that holds no speech for SILENCE_SECONDS is trimmed. A FLUSH, or
the end of the audio, commits everything.

Passes coalesce: what queued up during a pass is read at once before the next (up to a FLUSH,
which stays a boundary), so a client that sends faster than the model transcribes gets fewer,
longer passes rather than a growing backlog; and when no audio comes for the interval, the audio
that came since the last pass is transcribed anyway (a speaker's pause brings its text).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, replace

import numpy as np

from maestrale.engines.local.audio_decode import SAMPLE_RATE, too_long
from maestrale.engines.local.pcm import PcmDecoder
from maestrale.engines.transcription_types import (
    Flush,
    LanguageDetected,
    RealtimeTranscriptionRequest,
    Segment,
    TranscriptionEvent,
    TranscriptionResult,
)
from maestrale.engines.types import Usage

MAX_WINDOW_SECONDS = 20.0
SILENCE_SECONDS = 5.0
KEEP_AFTER_SILENCE_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Found:
    """One pass of the model over the window: its segments (times from the window's start) with
    their token counts, and the language it heard."""

    segments: list[tuple[Segment, int]]
    language: str | None


# Transcribes 16 kHz mono float32 samples (off the event loop).
Transcribe = Callable[[np.ndarray], Awaitable[Found]]


class Window:
    """The audio not committed yet, where it starts in the stream, and what is committed."""

    def __init__(self) -> None:
        self.samples = np.zeros(0, dtype=np.float32)
        self.start = 0.0  # seconds from the start of the audio
        self.received = 0  # samples since the start of the audio
        self.fresh = 0  # samples received since the last pass
        self.committed: list[Segment] = []
        self.tokens = 0

    @property
    def seconds(self) -> float:
        return len(self.samples) / SAMPLE_RATE

    def add(self, samples: np.ndarray) -> None:
        if len(samples):
            self.samples = np.concatenate((self.samples, samples))
            self.received += len(samples)
            self.fresh += len(samples)

    def commit(self, found: list[tuple[Segment, int]], final: bool) -> list[Segment]:
        """Commit what the pass `found` that is final (everything when `final`), moving the
        window past it; the committed segments, in stream time."""
        length = self.seconds
        if final:
            done, cut = found, length
        elif len(found) >= 2:
            done, cut = found[:-1], found[-2][0].end
        elif found and length >= MAX_WINDOW_SECONDS:
            done, cut = found, found[-1][0].end
        elif not found and length >= SILENCE_SECONDS:
            done, cut = [], length - KEEP_AFTER_SILENCE_SECONDS
        else:
            done, cut = [], 0.0
        out = []
        floor = self.committed[-1].end if self.committed else 0.0
        for segment, tokens in done:
            start = max(round(self.start + min(segment.start, length), 3), floor)
            end = max(round(self.start + min(segment.end, length), 3), start)
            out.append(replace(segment, start=start, end=end, words=[]))
            self.tokens += tokens
            floor = end
        self.committed += out
        dropped = round(min(max(cut, 0.0), length) * SAMPLE_RATE)
        self.samples = self.samples[dropped:]
        self.start += dropped / SAMPLE_RATE
        self.fresh = 0
        return out

    def result(self, language: str | None) -> TranscriptionResult:
        return TranscriptionResult(
            text=" ".join(segment.text for segment in self.committed),
            language=language,
            segments=list(self.committed),
            audio_seconds=self.received / SAMPLE_RATE,
            usage=Usage(completion_tokens=self.tokens),
        )


async def _next(
    queue: asyncio.Queue[bytes | Flush | None], timeout: float | None
) -> bytes | Flush | TimeoutError | None:
    if timeout is None:
        return await queue.get()
    try:
        return await asyncio.wait_for(queue.get(), timeout)
    except TimeoutError as exc:
        return exc


async def transcribe_realtime(
    request: RealtimeTranscriptionRequest, transcribe: Transcribe, language: str | None
) -> AsyncGenerator[TranscriptionEvent, None]:
    """The events of a realtime transcription of `request` with `transcribe` (see the module's
    docstring); `language` is known beforehand (an English-only model) or heard by the model.
    The request's audio format and interval are read when the first audio arrives."""
    decoder: PcmDecoder | None = None
    window = Window()
    interval = 1.0
    limit = request.max_seconds * SAMPLE_RATE
    announced = False
    ended = False
    last_pass = time.monotonic()
    while not ended:
        waited = interval - (time.monotonic() - last_pass) if window.fresh else None
        item = await _next(request.audio, None if waited is None else max(waited, 0.0))
        flush = False
        while True:  # everything that queued up, at once (up to a flush)
            if item is None:
                ended = True
            elif isinstance(item, Flush):
                flush = True
                break
            elif isinstance(item, bytes):
                if decoder is None:
                    decoder = PcmDecoder(request.audio_format)
                    interval = max(request.interval_seconds, 0.1)
                window.add(decoder.feed(item))
                if window.received > limit:
                    raise too_long(request.max_seconds)
            if ended or request.audio.empty():
                break
            item = request.audio.get_nowait()
        if ended and decoder is not None:
            window.add(decoder.end())
        if decoder is not None and not announced and language is not None:
            announced = True
            yield LanguageDetected(language)
        final = ended or flush
        idle = isinstance(item, TimeoutError)
        due = window.fresh >= interval * SAMPLE_RATE or (idle and window.fresh > 0)
        if not window.seconds or not (final or due):
            continue
        found = await transcribe(window.samples)
        last_pass = time.monotonic()
        if not announced and found.language:
            announced, language = True, found.language
            yield LanguageDetected(found.language)
        for segment in window.commit(found.segments, final):
            yield segment
    yield window.result(language)
