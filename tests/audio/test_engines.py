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
from tests.audio.speech import words as speech_words

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


def _library_beam() -> int:
    import inspect

    from faster_whisper import WhisperModel

    default = inspect.signature(WhisperModel.transcribe).parameters["beam_size"].default
    assert isinstance(default, int)
    return default


class _SpyModel:
    """Stands in for the loaded WhisperModel: records what the engine asks of it."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def transcribe(self, audio: Any, **options: Any) -> tuple[list[Any], Any]:
        from types import SimpleNamespace

        self.calls.append(options)
        return [], SimpleNamespace(language="en")


async def test_whisper_decodes_with_the_library_beam_unless_the_catalog_says_greedy() -> None:
    """Issue 14: greedy decoding (beam 1) was the default; the library's beam (5) is, and
    `beam_size = 1` in the catalog entry's options keeps greedy decoding available."""
    from maestrale.engines.local.whisper import create_engine
    from maestrale.engines.specs import ModelSpec

    clip = shipped()["report.wav"].data
    seen = {}
    for options in ({}, {"beam_size": 1}, {"beam_size": 3}):
        engine = create_engine(ModelSpec(id="w", engine="faster_whisper", options=options))
        spy = _SpyModel()
        engine._model = spy  # as if loaded: the decoding options are what is checked
        await engine.transcribe(request(clip))
        await engine.aclose()
        seen[options.get("beam_size")] = spy.calls[0].get("beam_size", _library_beam())
    assert seen == {None: _library_beam(), 1: 1, 3: 3}
    assert _library_beam() > 1


@pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")
async def test_whisper_by_default_transcribes_as_the_library_beam_does(whisper: Any) -> None:
    """The default engine and one told the library's beam explicitly give the same text (on the
    clip of the issue, where greedy decoding on this machine gave "round-fark ... nog")."""
    from maestrale.engines.local.whisper import create_engine
    from maestrale.engines.specs import ModelSpec

    speech = speak("the quick brown fox jumps over the lazy dog", "en-us", 140)
    explicit = create_engine(
        ModelSpec(id="w", engine="faster_whisper", options={"beam_size": _library_beam()})
    )
    try:
        beamed = await explicit.transcribe(request(speech))
    finally:
        await explicit.aclose()
    by_default = await whisper.transcribe(request(speech))
    assert by_default.text == beamed.text
    assert wer("the quick brown fox jumps over the lazy dog", by_default.text) <= 0.5


@pytest.fixture(scope="module")
async def sphinx() -> Any:
    pytest.importorskip("pocketsphinx")
    from maestrale.engines.local.sphinx import create_engine
    from maestrale.engines.specs import ModelSpec

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
    # A weak recogniser on synthetic speech: most words are wrong, and which ones changes with
    # the smallest change of input or build (WER 0.8 on this clip, 1.0 at 140 or 160 words a
    # minute). On any build: about as many words as were said, one of them right, all inside the
    # audio in order.
    assert 3 <= len(words) <= 20, result.text
    assert set(speech_words(result.text)) & set(speech_words(clip.text)), result.text
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
        Word("one", 0.0, 0.3),
        Word("two", 0.35, 0.6),
        None,
        Word("three", 1.5, 1.8),
        Word("four", 1.85, 2.0),
        Word("five", 2.8, 3.0),
    ]
    segments = group(words, 0.5)
    assert [(s.text, s.start, s.end) for s in segments] == [
        ("one two", 0.0, 0.6),
        ("three four", 1.5, 2.0),
        ("five", 2.8, 3.0),
    ]
    assert group([None, None], 0.5) == []
