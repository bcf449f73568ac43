"""The local transcription engines on shipped and generated speech: Whisper tiny.en
(faster-whisper) and pocketsphinx, plain and streamed."""

from __future__ import annotations

from typing import Any

import pytest

from maestrale.engines.protocols import Closeable, TranscriptionEngine
from maestrale.engines.transcription_types import (
    LanguageDetected,
    Segment,
    TranscriptionRequest,
    TranscriptionResult,
    Word,
)
from maestrale.engines.types import EngineError
from tests.audio.speech import espeak_available, shipped, speak, wer

pytest.importorskip("av")


def request(data: bytes, **fields: Any) -> TranscriptionRequest:
    return TranscriptionRequest(model="m", audio=data, **fields)


async def test_whisper_transcribes_the_shipped_clip(whisper: Any) -> None:
    assert isinstance(whisper, TranscriptionEngine) and isinstance(whisper, Closeable)
    clip = shipped()["report.m4a"]
    result = await whisper.transcribe(request(clip.data))
    assert wer(clip.text, result.text) <= 0.1, result.text
    assert result.language == "en"
    assert 3.8 < result.audio_seconds < 4.0
    assert result.usage.completion_tokens > 5
    assert all(0 <= s.start < s.end <= result.audio_seconds + 0.1 for s in result.segments)
    assert all(not s.words for s in result.segments)  # no word timestamps unless asked


async def test_whisper_word_timestamps_follow_the_speech(whisper: Any) -> None:
    clip = shipped()["report.wav"]
    result = await whisper.transcribe(request(clip.data, timestamp_granularities=["word"]))
    words = [w for s in result.segments for w in s.words]
    assert len(words) >= 8
    assert all(isinstance(w.start, float) and w.start <= w.end for w in words)
    assert [w.start for w in words] == sorted(w.start for w in words)
    assert words[-1].end > 2.5  # the last word comes late in a ~3.9 s clip


async def test_whisper_stream_yields_language_segments_then_result(whisper: Any) -> None:
    clip = shipped()["report.ogg"]
    events = [event async for event in whisper.transcribe_stream(request(clip.data))]
    assert isinstance(events[0], LanguageDetected) and events[0].language == "en"
    assert isinstance(events[-1], TranscriptionResult)
    segments = [e for e in events if isinstance(e, Segment)]
    assert segments == events[-1].segments
    assert wer(clip.text, events[-1].text) <= 0.1


async def test_whisper_refuses_other_languages_and_bad_audio(whisper: Any) -> None:
    with pytest.raises(EngineError) as caught:
        await whisper.transcribe(request(shipped()["report.wav"].data, language="de"))
    assert (caught.value.status, caught.value.code) == (400, "unsupported_language")
    with pytest.raises(EngineError) as caught:
        await whisper.transcribe(request(b"not audio"))
    assert caught.value.status == 400
    with pytest.raises(EngineError) as caught:
        await whisper.transcribe(request(shipped()["report.wav"].data, max_seconds=1.0))
    assert caught.value.status == 413


@pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")
async def test_whisper_on_fresh_espeak_speech(whisper: Any) -> None:
    text = "she opened the window and looked at the garden"
    result = await whisper.transcribe(request(speak(text, "en-us+m3", 130), temperature=0.0))
    assert wer(text, result.text) <= 0.2, result.text


@pytest.fixture(scope="module")
async def sphinx() -> Any:
    pytest.importorskip("pocketsphinx")
    from maestrale.catalog.config import ModelSpec
    from maestrale.engines.local.sphinx import create_engine

    engine = create_engine(ModelSpec(id="pocketsphinx-en", engine="pocketsphinx"))
    yield engine
    await engine.aclose()


async def test_pocketsphinx_transcribes_with_word_times(sphinx: Any) -> None:
    assert isinstance(sphinx, TranscriptionEngine)
    clip = shipped()["report.flac"]
    result = await sphinx.transcribe(request(clip.data))
    assert result.language == "en"
    assert 3.8 < result.audio_seconds < 4.0
    words = [w for s in result.segments for w in s.words]
    assert words and result.text == " ".join(s.text for s in result.segments)
    # A weak recogniser on synthetic speech: the words are not all right, but some are, and
    # they all fall inside the audio in order.
    assert wer(clip.text, result.text) < 1.0
    assert all(0 <= w.start <= w.end <= 4.0 for w in words)
    events = [e async for e in sphinx.transcribe_stream(request(clip.data))]
    assert isinstance(events[0], LanguageDetected) and isinstance(events[-1], TranscriptionResult)
    with pytest.raises(EngineError) as caught:
        await sphinx.transcribe(request(clip.data, language="fr"))
    assert caught.value.status == 400


def test_pocketsphinx_groups_words_at_pauses() -> None:
    pytest.importorskip("pocketsphinx")
    from maestrale.engines.local.sphinx import group

    words = [
        Word("one", 0.0, 0.3), Word("two", 0.35, 0.6), None,
        Word("three", 1.5, 1.8), Word("four", 1.85, 2.0), Word("five", 2.8, 3.0),
    ]  # fmt: skip
    segments = group(words, 0.5)
    assert [(s.text, s.start, s.end) for s in segments] == [
        ("one two", 0.0, 0.6), ("three four", 1.5, 2.0), ("five", 2.8, 3.0),
    ]  # fmt: skip
    assert group([None, None], 0.5) == []
