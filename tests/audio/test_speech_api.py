"""POST /v1/audio/speech and the realtime speech WebSocket on the builtin speech engine (a tone
per sentence, 50 ms per character at 16 kHz; voices echo-low and echo-high; it clones): every
output format decoded back to audio of the right length, streaming, OpenAI's raw answer, voices
(preset, custom, ref_audio), accounting, hostile input and hostile WebSocket frames."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from websockets.asyncio.client import ClientConnection, connect

from maestrale.accounting.tables import UsageRecord
from maestrale.app import create_app
from maestrale.audio.realtime import duplex as duplex_module
from maestrale.engines.builtin.speech import tone
from maestrale.voices.sample import wav_bytes
from tests.audio.conftest import WHISPER_ID, lent_app
from tests.audio.speech import wer
from tests.support import app_fixtures
from tests.support.app_fixtures import API_KEY, make_client
from tests.support.live import on_socket

av = pytest.importorskip("av")
np = pytest.importorskip("numpy")

URL = "/v1/audio/speech"
MODEL = "maestrale-echo-speech"
TEXT = "Hello there. How are you?"  # two sentences of 12 characters: 0.6 s each
SECONDS = 1.2


@pytest.fixture
async def app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    """The plain test app: these tests need no Whisper (the audio tests' `app` lends it)."""
    application = create_app(app_fixtures.test_settings(database_url, tmp_path / "data"))
    async with application.router.lifespan_context(application):
        yield application


def seconds_of(data: bytes, format_name: str, openai: bool = False) -> float:
    """The length of `data` decoded (PyAV reads every container; pcm is headerless 24 kHz)."""
    if format_name == "pcm":
        return len(data) / (2 if openai else 4) / 24_000
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        samples = sum(frame.samples for frame in container.decode(stream))
        return float(samples / stream.rate)


def sample_wav(seconds: float = 3.0, frequency: float = 300.0) -> str:
    pcm = np.frombuffer(tone(frequency, seconds), dtype="<i2")
    resampled = np.repeat(pcm, 3)[::2]  # 16 kHz → 24 kHz, a crude but real tone
    return base64.b64encode(wav_bytes(resampled.astype("<i2").tobytes())).decode()


async def speak(client: httpx.AsyncClient, **fields: Any) -> httpx.Response:
    return await client.post(URL, json={"model": MODEL, "input": TEXT, **fields})


def audio_of(response: httpx.Response) -> bytes:
    assert response.status_code == 200, response.text
    return base64.b64decode(response.json()["audio_data"])


@pytest.mark.parametrize("format_name", ["pcm", "wav", "mp3", "flac", "opus"])
async def test_each_format_is_real_audio_of_the_right_length(
    client: httpx.AsyncClient, format_name: str
) -> None:
    data = audio_of(await speak(client, response_format=format_name))
    # MP3 frames pad the end (no gapless header: the stream is written straight through).
    assert seconds_of(data, format_name) == pytest.approx(SECONDS, abs=0.12)


async def test_stream_sends_a_delta_per_sentence_and_is_accounted(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    async with client.stream(
        "POST", URL, json={"model": MODEL, "input": TEXT, "stream": True, "response_format": "wav"}
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        text = "".join([chunk async for chunk in response.aiter_text()])
    events = []
    for block in text.strip().split("\n\n"):
        kind, data = block.split("\n")
        events.append((kind.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    kinds = [kind for kind, _ in events]
    assert kinds == ["speech.audio.delta"] * 2 + ["speech.audio.done"]
    assert all(body["type"] == kind for kind, body in events)
    audio = b"".join(base64.b64decode(body["audio_data"]) for _, body in events[:-1])
    assert seconds_of(audio, "wav") == pytest.approx(SECONDS, abs=0.01)
    usage = events[-1][1]["usage"]
    assert usage["prompt_tokens"] == usage["total_tokens"] == len(TEXT)

    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        [row] = (await work.session.execute(select(UsageRecord))).scalars().all()
    assert (row.endpoint, row.model, row.status_code) == ("audio_speech", MODEL, 200)
    assert row.prompt_tokens == len(TEXT)
    assert row.audio_seconds == pytest.approx(SECONDS, abs=0.01)


async def test_openai_clients_get_raw_audio(client: httpx.AsyncClient) -> None:
    response = await client.post(
        URL,
        json={"model": MODEL, "input": TEXT, "voice": "echo-high", "speed": 2.0},
        headers={"Accept": "application/octet-stream"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "audio/mpeg"
    assert seconds_of(response.content, "mp3") == pytest.approx(SECONDS / 2, abs=0.12)
    pcm = await client.post(
        URL,
        json={"model": MODEL, "input": TEXT, "voice": {"id": "echo-low"}, "response_format": "pcm"},
    )
    assert pcm.headers["content-type"] == "audio/pcm"
    assert seconds_of(pcm.content, "pcm", openai=True) == pytest.approx(SECONDS, abs=0.01)


async def test_voices_preset_custom_and_ref_audio(client: httpx.AsyncClient) -> None:
    default = audio_of(await speak(client, response_format="wav"))
    high = audio_of(await speak(client, response_format="wav", voice_id="echo-high"))
    sample = sample_wav()
    cloned = audio_of(await speak(client, response_format="wav", ref_audio=sample))
    created = await client.post("/v1/audio/voices", json={"name": "mine", "sample_audio": sample})
    assert created.status_code in (200, 201), created.text
    custom = audio_of(await speak(client, response_format="wav", voice_id=created.json()["id"]))
    assert len({default, high, cloned}) == 3
    assert custom == cloned  # the stored sample is the same normalized audio

    unknown = await speak(client, voice_id="nobody")
    assert unknown.status_code == 400
    assert unknown.json()["code"] == "unknown_voice" and unknown.json()["param"] == "voice_id"
    not_audio = await speak(client, ref_audio=base64.b64encode(b"not audio at all").decode())
    assert not_audio.status_code == 400 and not_audio.json()["param"] == "ref_audio"
    not_base64 = await speak(client, ref_audio="%%%")
    assert not_base64.status_code == 400 and not_base64.json()["code"] == "invalid_ref_audio"
    both = await speak(client, voice_id="echo-high", ref_audio=sample)
    assert both.status_code == 400


async def test_hostile_requests_get_clear_errors(client: httpx.AsyncClient) -> None:
    async def code_of(**fields: Any) -> tuple[int, str | None]:
        response = await client.post(URL, json={"model": MODEL, "input": TEXT, **fields})
        body = response.json()
        return response.status_code, body.get("code") if isinstance(body, dict) else None

    assert await code_of(input="  ") == (400, "empty_input")
    assert await code_of(input="word " * 20_000) == (400, "input_too_long")
    assert (await code_of(response_format="ogg-vorbis"))[0] == 422
    assert await code_of(instructions="whisper it") == (400, "unsupported_option")
    assert await code_of(conversation_history=[{"role": "user"}]) == (400, "unsupported_option")
    assert (await code_of(model="no-such-model"))[0] == 404
    assert (await code_of(model="maestrale-echo"))[0] == 400  # a chat model does not speak
    assert (await code_of(input="/fail 503\nHello."))[0] == 502
    assert (await code_of(expressiveness=2.5))[0] == 200  # accepted, no effect


@pytest.fixture
async def served(app: FastAPI) -> AsyncIterator[str]:
    async with on_socket(app) as port:
        yield f"ws://127.0.0.1:{port}/v1/audio/speech/realtime"


async def receive(conn: ClientConnection) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(await asyncio.wait_for(conn.recv(), 30))
    return body


async def test_realtime_speaks_each_sentence_and_survives_garbage(served: str) -> None:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with connect(f"{served}?model={MODEL}", additional_headers=headers) as conn:
        created = await receive(conn)
        assert created["type"] == "session.created"
        assert created["session"]["response_format"] == "pcm"
        for garbage in ("{not json", json.dumps({"type": "nope"}), json.dumps([1])):
            await conn.send(garbage)
            assert (await receive(conn))["type"] == "error"
        await conn.send(json.dumps({"type": "input_text.append", "text": "x" * 5000}))
        error = await receive(conn)
        assert error["error"]["code"] == 413
        await conn.send(json.dumps({"type": "session.update", "session": {"voice": "nobody"}}))
        assert (await receive(conn))["error"]["error_code"] == "unknown_voice"
        update = {"voice": "echo-high", "response_format": "wav"}
        await conn.send(json.dumps({"type": "session.update", "session": update}))
        updated = await receive(conn)
        assert updated["type"] == "session.updated"
        assert updated["session"]["voice"] == "echo-high"

        for piece in ("Hello wor", "ld. How are", " you?"):
            await conn.send(json.dumps({"type": "input_text.append", "text": piece}))
        first = await receive(conn)  # "Hello world." is complete: spoken before the end
        assert first["type"] == "speech.audio.delta"
        await conn.send(json.dumps({"type": "input_text.end"}))
        events = [first]
        while events[-1]["type"] != "speech.audio.done":
            events.append(await receive(conn))
        audio = b"".join(base64.b64decode(e["audio_data"]) for e in events[:-1])
        assert seconds_of(audio, "wav") == pytest.approx(0.6 + 0.6, abs=0.01)
        assert events[-1]["usage"]["prompt_tokens"] == len("Hello world.How are you?")


async def test_piper_speech_is_heard_back_by_whisper(
    database_url: str, tmp_path: Path, whisper: Any
) -> None:
    """The real round trip through the API: Piper speaks, Whisper hears the same words."""
    sentence = "Please send the report to the finance team before Friday."
    async with lent_app(database_url, tmp_path / "data", whisper) as application:
        if application.state.services.engines.resolve("piper-joe-en") is None:
            pytest.skip("piper (the [speech] extra) is not installed")
        async with make_client(application) as client:
            spoken = await client.post(
                URL, json={"model": "piper-joe-en", "input": sentence, "response_format": "flac"}
            )
            heard = await client.post(
                "/v1/audio/transcriptions",
                data={"model": WHISPER_ID},
                files={"file": ("speech.flac", audio_of(spoken))},
            )
            assert heard.status_code == 200, heard.text
            assert wer(sentence, heard.json()["text"]) <= 0.2
            # Piper does not clone: a sample is refused rather than ignored.
            refused = await client.post(
                URL, json={"model": "piper-joe-en", "input": sentence, "ref_audio": sample_wav()}
            )
            assert refused.status_code == 400
            assert refused.json()["code"] == "voice_cloning_unsupported"


APPENDS = 30


async def test_realtime_client_that_stops_reading_is_dropped(
    app: FastAPI, served: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Minutes of audio asked for and never read: the server's sends time out, the session
    ends and is accounted as abandoned (499); nothing piles up in the server."""
    monkeypatch.setattr(duplex_module, "SEND_TIMEOUT_SECONDS", 0.5)
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with connect(f"{served}?model={MODEL}", additional_headers=headers, max_queue=1) as conn:
        await receive(conn)  # session.created; nothing more is read until the server gives up
        sentence = "la " * 95 + "end. "  # the longest piece spoken in one go: 15 s of audio
        for _ in range(APPENDS):
            await conn.send(json.dumps({"type": "input_text.append", "text": sentence * 13}))
        await conn.send(json.dumps({"type": "input_text.end"}))
        recorder = app.state.services.recorder
        for _ in range(100):
            await asyncio.sleep(0.1)
            await recorder.flush()
            async with app.state.services.db.transaction() as work:
                rows = (await work.session.execute(select(UsageRecord))).scalars().all()
            if rows:
                break
        assert [(row.endpoint, row.status_code) for row in rows] == [("audio_speech", 499)]
        # Stopped long before the end: what the socket buffers held, no more.
        assert rows[0].audio_seconds < APPENDS * 13 * 14.5 / 2
