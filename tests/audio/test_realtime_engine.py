"""Realtime transcription inside the engine: PCM decoding (every platform encoding, resampling
chunk by chunk without seams), which segments of a pass are committed, and the pass schedule
(passes coalesce, a flush commits everything, silence and long windows are trimmed, audio past
the limit is a 413), with a stand-in for the model; then Whisper itself on a clip fed in pieces."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

from maestrale.engines.transcription_types import (
    FLUSH,
    LanguageDetected,
    PcmFormat,
    RealtimeInput,
    RealtimeTranscriptionRequest,
    Segment,
    TranscriptionEvent,
    TranscriptionResult,
)
from maestrale.engines.types import EngineError
from tests.audio.speech import shipped, wer

np = pytest.importorskip("numpy")
pytest.importorskip("av")

from maestrale.engines.local.audio_decode import SAMPLE_RATE, decode  # noqa: E402
from maestrale.engines.local.pcm import PcmDecoder, to_float  # noqa: E402
from maestrale.engines.local.whisper_realtime import (  # noqa: E402
    MAX_WINDOW_SECONDS,
    Found,
    Window,
    transcribe_realtime,
)


def test_g711_decoding_matches_the_reference_tables() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        audioop = pytest.importorskip("audioop")
    codes = bytes(range(256))
    for encoding, reference in (("pcm_mulaw", audioop.ulaw2lin), ("pcm_alaw", audioop.alaw2lin)):
        expected = np.frombuffer(reference(codes, 2), dtype="<i2") / 32768
        assert np.array_equal(to_float(codes, encoding), expected.astype(np.float32)), encoding


def test_linear_encodings_scale_to_unit_range() -> None:
    assert to_float(np.array([-32768, 0, 16384], "<i2").tobytes(), "pcm_s16le").tolist() == [
        -1.0,
        0.0,
        0.5,
    ]
    assert to_float(np.array([-(2**31), 2**30], "<i4").tobytes(), "pcm_s32le").tolist() == [
        -1.0,
        0.5,
    ]
    hostile = np.array([np.nan, np.inf, -np.inf, 3.0, 0.25], "<f4").tobytes()
    assert to_float(hostile, "pcm_f32le").tolist() == [0.0, 1.0, -1.0, 1.0, 0.25]
    assert to_float(np.array([0.5, -2.0], "<f2").tobytes(), "pcm_f16le").tolist() == [0.5, -1.0]


@pytest.mark.parametrize("rate", [8_000, 16_000, 44_100])
def test_chunks_decode_as_the_whole_does(rate: int) -> None:
    t = np.arange(rate) / rate
    tone = (0.5 * np.sin(2 * np.pi * 440 * t) * 32767).astype("<i2").tobytes()
    whole = PcmDecoder(PcmFormat("pcm_s16le", rate))
    expected = np.concatenate([whole.feed(tone), whole.end()])
    pieces = PcmDecoder(PcmFormat("pcm_s16le", rate))
    # Odd sizes: samples split between chunks are joined again.
    parts = [pieces.feed(tone[i : i + 999]) for i in range(0, len(tone), 999)]
    got = np.concatenate([*parts, pieces.end()])
    assert len(expected) == SAMPLE_RATE  # one second at 16 kHz, whatever the input rate
    assert np.allclose(got, expected, atol=1e-6)


def seg(text: str, start: float, end: float) -> tuple[Segment, int]:
    return Segment(text, start, end), len(text.split())


def test_a_pass_commits_every_segment_but_the_last() -> None:
    window = Window()
    window.add(np.zeros(int(6 * SAMPLE_RATE), np.float32))
    done = window.commit(
        [seg("one two", 0.0, 2.0), seg("three", 2.5, 4.0), seg("fo", 5.0, 6.0)], False
    )
    assert [(s.text, s.start, s.end) for s in done] == [("one two", 0.0, 2.0), ("three", 2.5, 4.0)]
    assert window.start == 4.0 and window.seconds == 2.0 and window.tokens == 3
    # The next pass's times are from the window's start: they come out in stream time.
    window.add(np.zeros(SAMPLE_RATE, np.float32))
    done = window.commit([seg("four five", 0.5, 2.5)], True)
    assert [(s.start, s.end) for s in done] == [(4.5, 6.5)]
    assert window.seconds == 0 and window.start == 7.0
    result = window.result("en")
    assert result.text == "one two three four five" and result.audio_seconds == 7.0


def test_long_windows_and_silence_are_not_kept_for_ever() -> None:
    window = Window()
    window.add(np.zeros(int((MAX_WINDOW_SECONDS + 1) * SAMPLE_RATE), np.float32))
    done = window.commit([seg("a very long sentence", 0.0, MAX_WINDOW_SECONDS)], False)
    assert [s.text for s in done] == ["a very long sentence"]
    assert window.seconds == pytest.approx(1.0)
    quiet = Window()
    quiet.add(np.zeros(6 * SAMPLE_RATE, np.float32))
    assert quiet.commit([], False) == []
    assert quiet.seconds == pytest.approx(1.0) and quiet.start == pytest.approx(5.0)
    short = Window()
    short.add(np.zeros(3 * SAMPLE_RATE, np.float32))
    assert short.commit([seg("half", 0.0, 3.0)], False) == [] and short.seconds == 3.0


class FakeModel:
    """Stands in for Whisper: every loud second of the window is one word, `w<i>` for the i-th
    second of the window, and quiet seconds (all zeros) hold none."""

    def __init__(self) -> None:
        self.passes: list[float] = []

    async def __call__(self, samples: Any) -> Found:
        seconds = len(samples) // SAMPLE_RATE
        self.passes.append(len(samples) / SAMPLE_RATE)
        found = [
            seg(f"w{i}", float(i), float(i + 1))
            for i in range(seconds)
            if samples[i * SAMPLE_RATE : (i + 1) * SAMPLE_RATE].any()
        ]
        await asyncio.sleep(0)
        return Found(found, "en")


def second(loud: bool = True) -> bytes:
    value = 1000 if loud else 0
    data: bytes = np.full(SAMPLE_RATE, value, dtype="<i2").tobytes()
    return data


async def run(
    items: list[RealtimeInput], model: FakeModel, **fields: Any
) -> list[TranscriptionEvent]:
    queue: asyncio.Queue[RealtimeInput] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    request = RealtimeTranscriptionRequest(
        model="m", audio_format=PcmFormat(), audio=queue, **fields
    )
    return [event async for event in transcribe_realtime(request, model, None)]


async def test_queued_audio_is_read_at_once_and_the_end_commits_everything() -> None:
    model = FakeModel()
    events = await run([second(), second(), second(), None], model)
    assert model.passes == [3.0]  # one pass over all that had queued up, not one per chunk
    assert isinstance(events[0], LanguageDetected) and events[0].language == "en"
    assert [e.text for e in events if isinstance(e, Segment)] == ["w0", "w1", "w2"]
    result = events[-1]
    assert isinstance(result, TranscriptionResult)
    assert result.text == "w0 w1 w2" and result.audio_seconds == 3.0


async def test_flush_commits_what_was_sent_and_the_session_goes_on() -> None:
    model = FakeModel()
    events = await run([second(), FLUSH, second(), second(False), None], model)
    segments = [(e.text, e.start, e.end) for e in events if isinstance(e, Segment)]
    assert segments == [("w0", 0.0, 1.0), ("w0", 1.0, 2.0)]
    assert model.passes == [1.0, 2.0]


async def test_text_comes_while_audio_is_still_arriving() -> None:
    model = FakeModel()
    queue: asyncio.Queue[RealtimeInput] = asyncio.Queue()
    request = RealtimeTranscriptionRequest(
        model="m", audio_format=PcmFormat(), audio=queue, interval_seconds=1.0
    )
    stream = transcribe_realtime(request, model, "en")
    for _ in range(3):
        await queue.put(second())
    assert await anext(stream) == LanguageDetected("en")
    first = await asyncio.wait_for(anext(stream), 5)  # no end, no flush: committed as it goes
    assert isinstance(first, Segment) and first.text == "w0"
    await queue.put(None)
    rest = [event async for event in stream]
    result = rest[-1]
    assert isinstance(result, TranscriptionResult)
    # The stand-in numbers words from the window's start: what counts is the stream's times.
    assert [(s.start, s.end) for s in result.segments] == [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]


async def test_a_pause_brings_the_text_of_what_came_before_it() -> None:
    model = FakeModel()
    queue: asyncio.Queue[RealtimeInput] = asyncio.Queue()
    request = RealtimeTranscriptionRequest(
        model="m", audio_format=PcmFormat(), audio=queue, interval_seconds=3.0
    )
    stream = transcribe_realtime(request, model, "en")
    await queue.put(second() + second())  # less than the interval, then nothing
    assert await anext(stream) == LanguageDetected("en")
    first = await asyncio.wait_for(anext(stream), 30)
    assert isinstance(first, Segment) and first.text == "w0"
    await stream.aclose()


async def test_audio_past_the_limit_is_refused() -> None:
    with pytest.raises(EngineError) as caught:
        await run([second(), second(), second(), None], FakeModel(), max_seconds=2.5)
    assert (caught.value.status, caught.value.code) == (413, "audio_too_long")


async def test_whisper_fed_in_pieces(whisper: Any) -> None:
    clip = shipped()["report.wav"]
    samples = decode(clip.data, 60).samples
    pcm = (samples * 32767).astype("<i2").tobytes()
    queue: asyncio.Queue[RealtimeInput] = asyncio.Queue()
    for i in range(0, len(pcm), 1_600):
        queue.put_nowait(pcm[i : i + 1_600])
    queue.put_nowait(None)
    request = RealtimeTranscriptionRequest(model="m", audio_format=PcmFormat(), audio=queue)
    events = [event async for event in whisper.transcribe_realtime(request)]
    assert events[0] == LanguageDetected("en")
    result = events[-1]
    assert isinstance(result, TranscriptionResult)
    assert wer(clip.text, result.text) <= 0.25, result.text
    assert result.segments == [e for e in events if isinstance(e, Segment)]
    assert abs(result.audio_seconds - len(samples) / SAMPLE_RATE) < 0.01
    french = RealtimeTranscriptionRequest(
        model="m", audio_format=PcmFormat(), audio=queue, language="fr"
    )
    with pytest.raises(EngineError) as caught:
        whisper.transcribe_realtime(french)
    assert caught.value.status == 400
