"""Speech through the clients that speak it, against a live server and the builtin speech model
(a tone per sentence, 50 ms per character): mistralai 3.x's `audio.speech.complete`, plain in
each format and streamed, and its realtime helper `audio.realtime_speech.speak_stream` (async:
run in a process of its own with that SDK first on the path); the OpenAI SDK's
`audio.speech.create`. Every answer and event parses into the SDK's own models, and every
audio decodes (PyAV) to the length spoken."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from openai import BadRequestError, OpenAI

from tests.conformance.conftest import LiveServer
from tests.support.sdks import NEWEST_3, ROOT, SdkProcess, sdk_dir

av = pytest.importorskip("av")

MODEL = "maestrale-echo-speech"
TEXT = "Hello there. How are you?"  # two sentences of 12 characters: 0.6 s each
SECONDS = 1.2


def seconds_of(data: bytes, format_name: str) -> float:
    if format_name == "pcm":  # the platform's pcm: f32le at 24 kHz
        return len(data) / 4 / 24_000
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        return float(sum(f.samples for f in container.decode(stream)) / stream.rate)


@pytest.fixture(scope="module")
def sdk3(live_server: LiveServer) -> Iterator[SdkProcess]:
    sdk = SdkProcess(NEWEST_3, live_server.url, live_server.api_key)
    yield sdk
    sdk.close()


def test_mistralai_3_speech(sdk3: SdkProcess) -> None:
    def complete(**kwargs: Any) -> Any:
        return sdk3.call("audio.speech.complete", model=MODEL, input=TEXT, **kwargs)

    for format_name in ("pcm", "wav", "mp3", "flac", "opus"):
        body = complete(response_format=format_name).ok()
        audio = base64.b64decode(body["audio_data"])
        assert seconds_of(audio, format_name) == pytest.approx(SECONDS, abs=0.12), format_name

    events = complete(response_format="flac", voice_id="echo-high", stream=True).ok()
    kinds = [e["event"] for e in events]
    # A delta per sentence (and the encoder's tail), then the usage.
    assert kinds[-1] == "speech.audio.done" and len(kinds) >= 3
    assert set(kinds[:-1]) == {"speech.audio.delta"}
    audio = b"".join(base64.b64decode(e["data"]["audio_data"]) for e in events[:-1])
    assert seconds_of(audio, "flac") == pytest.approx(SECONDS, abs=0.01)
    assert events[-1]["data"]["usage"]["prompt_tokens"] == len(TEXT)

    unknown = complete(voice_id="nobody")
    assert unknown.status == 400 and "unknown_voice" in unknown.body


REALTIME = """
import asyncio, base64, json, sys
from mistralai.client import Mistral

async def main(url, key, model):
    async def text():
        for piece in ("Hello wor", "ld. How are", " you?"):
            yield piece
    client = Mistral(api_key=key, server_url=url)
    out = []
    async for event in client.audio.realtime_speech.speak_stream(
        text(), model, voice_id="echo-high", response_format="wav"
    ):
        body = event.model_dump(mode="json")
        out.append({"class": type(event).__name__, "body": body})
    print(json.dumps(out))

asyncio.run(main(*sys.argv[1:]))
"""


def test_mistralai_3_realtime_speech(live_server: LiveServer) -> None:
    where = sdk_dir(NEWEST_3)
    if where is None or not (where / "mistralai").is_dir():
        pytest.skip(f"mistralai {NEWEST_3} is not installed: run make")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(where), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", REALTIME, live_server.url, live_server.api_key, MODEL],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    events = json.loads(done.stdout)
    classes = [e["class"] for e in events]
    assert classes[:2] == ["RealtimeSpeechSessionCreated", "RealtimeSpeechSessionUpdated"]
    assert classes[-1] == "SpeechStreamDone"
    assert set(classes[2:-1]) == {"SpeechStreamAudioDelta"}
    assert events[1]["body"]["session"]["voice"] == "echo-high"
    audio = b"".join(base64.b64decode(e["body"]["audio_data"]) for e in events[2:-1])
    assert seconds_of(audio, "wav") == pytest.approx(SECONDS, abs=0.01)


def test_openai_sdk_speech(live_server: LiveServer) -> None:
    client = OpenAI(api_key=live_server.api_key, base_url=f"{live_server.url}/v1")
    spoken = client.audio.speech.create(
        model=MODEL, voice="echo-high", input=TEXT, response_format="wav"
    )
    assert seconds_of(spoken.content, "wav") == pytest.approx(SECONDS, abs=0.01)
    with client.audio.speech.with_streaming_response.create(
        model=MODEL, voice="echo-low", input=TEXT, response_format="opus", speed=2.0
    ) as streamed:
        audio = b"".join(streamed.iter_bytes())
    assert seconds_of(audio, "opus") == pytest.approx(SECONDS / 2, abs=0.01)
    with pytest.raises(BadRequestError):
        client.audio.speech.create(model=MODEL, voice="alloy", input=TEXT)
