"""The realtime transcription WebSocket (/v1/audio/transcriptions/realtime) on a server in this
process (the test app on each database backend, Whisper lent by the session): the protocol,
text that arrives while the audio is still coming, accounting, auth, limits, hostile messages,
and unknown WebSocket paths answered 404 rather than 403."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import math
import wave
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from maestrale.accounting.tables import UsageRecord
from tests.audio.conftest import WHISPER_ID, lent_app
from tests.audio.speech import encode, shipped, wer
from tests.support.app_fixtures import ADMIN_KEY, API_KEY
from tests.support.live import on_socket

pytest.importorskip("av")
np = pytest.importorskip("numpy")

PATH = "/v1/audio/transcriptions/realtime"
REFERENCE = shipped()["report.wav"].text
# Long enough for the session to outlive an exchange, short enough to see it expire.
WAIT = 120.0


def pcm16(rate: int = 16_000) -> bytes:
    """The shipped clip as raw mono s16le PCM at `rate` Hz."""
    data = shipped()["report.wav"].data
    if rate != 16_000:
        data = encode(data, "wav", rate)
    with wave.open(io.BytesIO(data)) as clip:
        assert clip.getframerate() == rate and clip.getsampwidth() == 2
        frames: bytes = clip.readframes(clip.getnframes())
    return frames


def silence(seconds: float, rate: int = 16_000, width: int = 2) -> bytes:
    return bytes(int(seconds * rate) * width)


@pytest.fixture
async def served(app: FastAPI) -> AsyncIterator[str]:
    async with on_socket(app) as port:
        yield f"ws://127.0.0.1:{port}"


def ws(url: str, model: str | None = WHISPER_ID, key: str | None = API_KEY) -> Any:
    query = f"?model={model}" if model is not None else ""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return connect(f"{url}{PATH}{query}", additional_headers=headers, max_size=None)


async def receive(conn: ClientConnection) -> dict[str, Any]:
    message = await asyncio.wait_for(conn.recv(), WAIT)
    body: dict[str, Any] = json.loads(message)
    return body


async def send(conn: ClientConnection, kind: str, **fields: Any) -> None:
    await conn.send(json.dumps({"type": kind, **fields}))


async def append(conn: ClientConnection, pcm: bytes, chunk: int = 6_400) -> None:
    for i in range(0, len(pcm), chunk):
        await send(conn, "input_audio.append", audio=base64.b64encode(pcm[i : i + chunk]).decode())


async def until(conn: ClientConnection, kind: str) -> list[dict[str, Any]]:
    """The events up to and including the first of type `kind`."""
    events = []
    while True:
        events.append(await receive(conn))
        if events[-1]["type"] == kind:
            return events


async def usage_rows(app: FastAPI) -> list[UsageRecord]:
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        return list((await work.session.execute(select(UsageRecord))).scalars().all())


async def test_text_arrives_before_the_audio_ends_and_the_session_is_accounted(
    app: FastAPI, served: str
) -> None:
    first = pcm16() + silence(1.0)
    second = pcm16()
    async with ws(served) as conn:
        created = await receive(conn)
        assert created["type"] == "session.created"
        session = created["session"]
        assert session["model"] == WHISPER_ID and session["request_id"]
        assert session["audio_format"] == {"encoding": "pcm_s16le", "sample_rate": 16_000}
        await append(conn, first)
        await send(conn, "input_audio.flush")
        # The first sentence's text comes while the second has not been sent.
        early = await until(conn, "transcription.text.delta")
        assert early[0] == {"type": "transcription.language", "audio_language": "en"}
        early += await until(conn, "transcription.segment")
        await append(conn, second)
        await send(conn, "input_audio.end")
        events = early + await until(conn, "transcription.done")
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(conn.recv(), WAIT)
        assert conn.close_code == 1000
    done = events[-1]
    deltas = "".join(e["text"] for e in events if e["type"] == "transcription.text.delta")
    assert deltas == done["text"]
    assert wer(f"{REFERENCE} {REFERENCE}", done["text"]) <= 0.3, done["text"]
    segments = [e for e in events if e["type"] == "transcription.segment"]
    assert [s["text"] for s in segments] == [s["text"] for s in done["segments"]]
    ends = [s["end"] for s in segments]
    assert ends == sorted(ends) and all(s["start"] <= s["end"] for s in segments)
    assert segments[0]["end"] <= len(first) / 32_000 + 0.1  # the first sentence's own times
    seconds = (len(first) + len(second)) / 32_000
    assert done["model"] == WHISPER_ID and done["language"] == "en"
    assert done["usage"]["prompt_audio_seconds"] == math.ceil(seconds)
    rows = await usage_rows(app)
    assert [(r.endpoint, r.status_code, r.model) for r in rows] == [
        ("audio_transcriptions", 200, WHISPER_ID)
    ]
    assert abs(rows[0].audio_seconds - seconds) < 0.05
    assert rows[0].completion_tokens > 0


async def test_another_format_and_the_platform_name(served: str) -> None:
    audio = np.frombuffer(pcm16(44_100), dtype="<i2").astype("<f4") / 32768
    async with ws(served, model="voxtral-mini-transcribe-realtime-2602") as conn:
        assert (await receive(conn))["type"] == "session.created"
        update = {"audio_format": {"encoding": "pcm_f32le", "sample_rate": 44_100}}
        await send(conn, "session.update", session={**update, "target_streaming_delay_ms": 500})
        updated = await receive(conn)
        assert updated["type"] == "session.updated"
        assert updated["session"]["audio_format"] == update["audio_format"]
        assert updated["session"]["target_streaming_delay_ms"] == 500
        await append(conn, audio.tobytes(), chunk=44_100)
        await send(conn, "input_audio.end")
        done = (await until(conn, "transcription.done"))[-1]
    assert done["model"] == "voxtral-mini-transcribe-realtime-2602"
    assert wer(REFERENCE, done["text"]) <= 0.3, done["text"]
    assert done["usage"]["prompt_audio_seconds"] == 4


async def test_bad_messages_are_answered_and_the_session_goes_on(served: str) -> None:
    async with ws(served) as conn:
        assert (await receive(conn))["type"] == "session.created"
        bad: list[str | bytes] = [
            "not json",
            "[1, 2]",
            json.dumps({"type": "input_audio.append", "audio": "***"}),
            json.dumps({"type": "input_audio.append", "audio": "A" * 400_000}),
            json.dumps({"type": "no.such.type"}),
            json.dumps(
                {"type": "session.update", "session": {"audio_format": {"encoding": "mp3"}}}
            ),
            json.dumps({"type": "session.update", "session": "x"}),
            json.dumps({"type": "session.update", "session": {"diarize": True}}),  # 3.x's
            json.dumps({"type": "input_audio.append", "audio": "\ud800"}),
            b"\x00\x01 binary",
        ]
        codes = []
        for frame in bad:
            await conn.send(frame)
            event = await receive(conn)
            assert event["type"] == "error", event
            assert isinstance(event["error"]["message"], str)
            codes.append((event["error"]["code"], event["error"]["error_code"]))
        assert codes == [
            (400, "invalid_message"),
            (400, "invalid_message"),
            (400, "invalid_audio"),
            (413, "audio_chunk_too_large"),
            (400, "unknown_message_type"),
            (422, "invalid_session"),
            (422, "invalid_session"),
            (422, "invalid_session"),
            (400, "invalid_message"),  # a lone surrogate is not JSON text
            (400, "invalid_message"),
        ]
        await append(conn, pcm16())
        fmt = {"audio_format": {"encoding": "pcm_s32le", "sample_rate": 8000}}
        await send(conn, "session.update", session=fmt)
        await send(conn, "input_audio.end")
        await send(conn, "input_audio.append", audio=base64.b64encode(b"\0\0").decode())
        events = await until(conn, "transcription.done")
    late = [e for e in events if e["type"] == "error"]
    assert [e["error"]["error_code"] for e in late] == ["session_locked", "audio_ended"]
    assert wer(REFERENCE, events[-1]["text"]) <= 0.3


async def test_refusals_before_the_session(served: str) -> None:
    for key in (None, "msk_not_a_key", ADMIN_KEY):
        with pytest.raises(InvalidStatus) as caught:
            async with ws(served, key=key):
                pass
        assert caught.value.response.status_code == 401
        body = json.loads(caught.value.response.body or b"{}")
        assert body["type"] == "authentication_error"
    for model, status, code in (
        ("no-such-model", 404, "model_not_found"),
        ("pocketsphinx-en", 400, "model_capability_missing"),
        ("maestrale-echo", 400, "model_capability_missing"),
        (None, 400, "invalid_request"),
    ):
        async with ws(served, model=model) as conn:
            event = await receive(conn)
            assert event["type"] == "error"
            assert (event["error"]["code"], event["error"]["error_code"]) == (status, code)
            with pytest.raises(ConnectionClosed):
                await receive(conn)
            assert conn.close_code == 1008


async def test_unknown_websocket_paths_are_404(served: str) -> None:
    for path in ("/v1/no/such/socket", "/v1/models", "/v1/audio/transcriptions", "/"):
        with pytest.raises(InvalidStatus) as caught:
            async with connect(
                f"{served}{path}", additional_headers={"Authorization": f"Bearer {API_KEY}"}
            ):
                pass
        assert caught.value.response.status_code == 404, path
        body = json.loads(caught.value.response.body or b"{}")
        assert body["code"] == "route_not_found"


async def test_audio_past_the_duration_limit_ends_the_session(
    database_url: str, tmp_path: Path, whisper: Any
) -> None:
    lent = lent_app(database_url, tmp_path / "data", whisper, audio_max_seconds=3)
    async with lent as app, on_socket(app) as port:
        url = f"ws://127.0.0.1:{port}"
        async with ws(url) as conn:
            assert (await receive(conn))["type"] == "session.created"
            await append(conn, pcm16())  # 3.9 s
            events = await until(conn, "error")
            assert (events[-1]["error"]["code"], events[-1]["error"]["error_code"]) == (
                413,
                "audio_too_long",
            )
            with pytest.raises(ConnectionClosed):
                await receive(conn)
            assert conn.close_code == 1008
        async with ws(url) as conn:  # a client that goes away mid-session
            assert (await receive(conn))["type"] == "session.created"
            await append(conn, pcm16()[:32_000])
        for _ in range(100):
            rows = await usage_rows(app)
            if len(rows) == 2:
                break
            await asyncio.sleep(0.05)
        assert sorted(r.status_code for r in rows) == [413, 499]
