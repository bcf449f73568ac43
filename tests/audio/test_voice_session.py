"""The voice session WebSocket (/v1/audio/sessions/{id}/realtime) on a live socket, driven with
espeak-ng speech: Whisper (local) hears the user, the echo chat model answers in the session's
conversation, the builtin speech engine speaks; barge-in cuts an answer and what is stored of it
is what was spoken; the socket's refusals and bad messages."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import wave
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from maestrale.accounting.tables import UsageRecord
from tests.audio.conftest import WHISPER_ID, lent_app
from tests.audio.speech import encode, espeak_available, speak, wer
from tests.support.app_fixtures import make_client
from tests.support.live import on_socket
from tests.voices.support import create_voice

pytest.importorskip("av")
pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")

WAIT = 60.0
# Said with pauses, so that Whisper writes them as sentences and the answer is several.
LONG = ("please send the report", "then call the bank", "thank you")
SETUP = {
    "llm": {"model": "maestrale-echo"},
    "stt": {"model": WHISPER_ID},
    "tts": {"model": "maestrale-echo-speech"},
}


def pcm16(text: str) -> bytes:
    with wave.open(io.BytesIO(encode(speak(text), "wav", 16_000))) as clip:
        frames: bytes = clip.readframes(clip.getnframes())
    return frames


def silence(seconds: float) -> bytes:
    return bytes(int(seconds * 16_000) * 2)


@pytest.fixture
async def served(
    database_url: str, tmp_path: Path, whisper: Any
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient, int]]:
    async with (
        lent_app(database_url, tmp_path / "data", whisper) as app,
        on_socket(app) as port,
        make_client(app) as client,
    ):
        yield app, client, port


async def open_session(client: httpx.AsyncClient, port: int, **setup: Any) -> tuple[str, str, str]:
    created = await client.post("/v1/audio/sessions", json={**SETUP, **setup})
    assert created.status_code == 200, created.text
    body = created.json()
    url = body["server_url"].replace("ws://test", f"ws://127.0.0.1:{port}")
    return body["id"], url, body["participant_token"]


async def receive(conn: ClientConnection) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(await asyncio.wait_for(conn.recv(), WAIT))
    return body


async def until(conn: ClientConnection, kind: str, seen: list[dict[str, Any]]) -> dict[str, Any]:
    while True:
        seen.append(await receive(conn))
        if seen[-1]["type"] == kind:
            return seen[-1]


async def say(conn: ClientConnection, pcm: bytes, chunk: int = 6_400) -> None:
    for at in range(0, len(pcm), chunk):
        audio = base64.b64encode(pcm[at : at + chunk]).decode()
        await conn.send(json.dumps({"type": "input_audio.append", "audio": audio}))


async def test_a_conversation_with_barge_in(
    served: tuple[FastAPI, httpx.AsyncClient, int],
) -> None:
    app, client, port = served
    # Pauses within a turn up to 1.5 s: the long turn below ends with a flush instead.
    stt = {**SETUP["stt"], "turn_detection": {"min_silence_ms": 1500}}
    session_id, url, token = await open_session(client, port, welcome_message="Welcome.", stt=stt)
    spoken = "we need more coffee"
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as conn:
        seen: list[dict[str, Any]] = []
        assert (await receive(conn))["type"] == "session.created"
        await until(conn, "output_audio.done", seen)  # the welcome message
        await conn.send("not json")
        assert (await until(conn, "error", seen))["fatal"] is False

        seen.clear()
        await say(conn, pcm16(spoken) + silence(1.6))
        await until(conn, "output_audio.done", seen)
        seen.append(await receive(conn))  # listening again
        user = [e for e in seen if e["type"] == "transcription.segment" and e["role"] == "user"]
        assert user[-1]["final"] and wer(spoken, user[-1]["content"]) <= 0.25
        assistant = [e for e in seen if e.get("role") == "assistant" and e["final"]]
        assert assistant[-1]["content"] == f"echo: {user[-1]['content']}"
        audio = [e for e in seen if e["type"] == "output_audio.delta"]
        assert audio and all(e["sample_rate"] == 16_000 for e in audio)
        states = [e["state"] for e in seen if e["type"] == "agent.state.changed"]
        assert states == ["thinking", "speaking", "listening"]

        # A long answer, cut by the user as soon as it is heard.
        seen.clear()
        await say(conn, b"".join(pcm16(text) + silence(0.6) for text in LONG))
        await conn.send(json.dumps({"type": "input_audio.flush"}))
        first = await until(conn, "output_audio.delta", seen)
        await say(conn, pcm16("stop"))
        cut = await until(conn, "output_audio.interrupted", seen)
        assert cut["id"] == first["id"]
        await say(conn, silence(1.6))  # the barge-in is a turn: it is answered
        await until(conn, "output_audio.done", seen)
        await conn.send(json.dumps({"type": "session.close"}))
        assert (await until(conn, "session.ended", seen))["reason"] == "closed"
        heard = [e["content"] for e in seen if e.get("id") == first["id"] and "role" in e]

    got = (await client.get(f"/v1/audio/sessions/{session_id}")).json()
    assert got["status"] == "ended" and got["num_participants"] == 0
    roles = [t["role"] for t in got["transcripts"]]
    assert roles == ["user", "assistant"] * 3
    assert got["transcripts"][5]["content"] == f"echo: {got['transcripts'][4]['content']}"
    assert got["transcripts"][0]["content"] == user[-1]["content"]
    # What is stored of the cut answer is what was spoken of it: a few words at most.
    whole = f"echo: {got['transcripts'][2]['content']}"
    assert got["transcripts"][3]["content"] == heard[-1]
    assert whole.startswith(heard[-1]) and len(heard[-1]) < len(whole) / 2
    # Every model call is accounted, correlated to the session.
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        rows = (await work.session.execute(select(UsageRecord))).scalars().all()
    calls = {(row.endpoint, row.model) for row in rows if row.correlation_id == session_id}
    assert calls >= {
        ("audio_transcriptions", WHISPER_ID),
        ("chat", "maestrale-echo"),
        ("audio_speech", "maestrale-echo-speech"),
    }


async def test_the_socket_refuses(served: tuple[FastAPI, httpx.AsyncClient, int]) -> None:
    _, client, port = served
    # A voice the speech model does not have, nor the workspace: the welcome is an error event.
    tts = {"model": "maestrale-echo-speech", "voice_id": "nope"}
    session_id, url, token = await open_session(client, port, tts=tts, welcome_message="Hi.")
    for headers, status in (({}, 401), ({"Authorization": "Bearer wrong"}, 401)):
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url, additional_headers=headers):
                pass
        assert refused.value.response.status_code == status
    async with connect(f"{url}?token={token}") as conn:
        seen: list[dict[str, Any]] = []
        assert (await receive(conn))["type"] == "session.created"
        error = await until(conn, "error", seen)
        assert error["code"] == "unknown_voice" and error["source"] == "tts"
        with pytest.raises(InvalidStatus) as busy:
            async with connect(f"{url}?token={token}"):
                pass
        assert busy.value.response.status_code == 409
        live = (await client.get(f"/v1/audio/sessions/{session_id}")).json()
        assert live["num_participants"] == 1
        assert (await client.delete(f"/v1/audio/sessions/{session_id}")).status_code == 204
        assert (await until(conn, "session.ended", seen))["reason"] == "closed"
    with pytest.raises(InvalidStatus) as ended:
        async with connect(f"{url}?token={token}"):
            pass
    assert ended.value.response.status_code == 409


async def test_a_custom_voice_speaks(served: tuple[FastAPI, httpx.AsyncClient, int]) -> None:
    _, client, port = served
    custom = await create_voice(client)  # the builtin speech engine clones: its own pitch
    audio = []
    for voice_id in ("echo-low", custom["id"]):
        tts = {"model": "maestrale-echo-speech", "voice_id": voice_id}
        _, url, token = await open_session(client, port, tts=tts, welcome_message="Hi.")
        async with connect(f"{url}?token={token}") as conn:
            seen: list[dict[str, Any]] = []
            await until(conn, "output_audio.done", seen)
        audio.append([e["audio"] for e in seen if e["type"] == "output_audio.delta"])
    assert audio[0] and audio[1] and audio[0] != audio[1]


async def test_typed_turns_and_client_functions(
    served: tuple[FastAPI, httpx.AsyncClient, int],
) -> None:
    """A typed turn makes the model call a function tool of the session: the client gets
    `tool_call.started`, its filler is spoken, its `tool_call.result` goes back to the model,
    which answers from it; a result for no waiting call is a non-fatal error."""
    _, client, port = served
    lookup = {
        "type": "function",
        "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
        "filler": {"type": "static", "text": "Let me check."},
        "timeout_ms": 10_000,
    }
    session_id, url, token = await open_session(client, port, tools=[lookup])
    created = await client.get(f"/v1/audio/sessions/{session_id}")
    assert created.status_code == 200
    async with connect(f"{url}?token={token}") as conn:
        seen: list[dict[str, Any]] = []
        assert (await receive(conn))["type"] == "session.created"
        stray = {"type": "tool_call.result", "id": "nope", "result": "x"}
        await conn.send(json.dumps(stray))
        assert (await until(conn, "error", seen))["code"] == "unknown_tool_call"
        typed = '/call lookup {"query": "opening hours"}'
        await conn.send(json.dumps({"type": "input_text", "text": typed}))
        started = await until(conn, "tool_call.started", seen)
        assert started["name"] == "lookup"
        assert json.loads(started["arguments"]) == {"query": "opening hours"}
        result = {"type": "tool_call.result", "id": started["id"], "result": "nine to five"}
        await conn.send(json.dumps(result))
        ended = await until(conn, "tool_call.ended", seen)
        assert ended["status"] == "done" and ended["result"] == "nine to five"
        await until(conn, "output_audio.done", seen)
        said = [e["content"] for e in seen if e.get("role") == "assistant" and e["final"]]
        assert said[-1] == "Let me check. tool lookup returned: nine to five"
    got = (await client.get(f"/v1/audio/sessions/{session_id}")).json()
    first, *_, last = got["transcripts"]
    assert (first["role"], first["content"]) == ("user", typed)
    assert (last["role"], last["content"]) == ("assistant", "tool lookup returned: nine to five")


async def test_inactivity_reminds_then_ends(served: tuple[FastAPI, httpx.AsyncClient, int]) -> None:
    """turn.inactivity: a silent user hears the reminder, then the session ends; the reminder
    is not stored."""
    _, client, port = served
    turn = {"inactivity": {"timeout_ms": 300, "max_reminders": 1, "messages": ["Still there?"]}}
    session_id, url, token = await open_session(client, port, turn=turn)
    async with connect(f"{url}?token={token}") as conn:
        seen: list[dict[str, Any]] = []
        ended = await until(conn, "session.ended", seen)
    assert ended["reason"] == "inactivity"
    said = [e["content"] for e in seen if e.get("role") == "assistant" and e["final"]]
    assert said == ["Still there?"]
    assert (await client.get(f"/v1/audio/sessions/{session_id}")).json()["transcripts"] == []
