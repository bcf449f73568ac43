"""Chat with audio on a model that hears through transcription (the `audio_chat` engine, which
serves the platform's Voxtral names): each `input_audio` chunk is transcribed (a call of its own,
accounted) and the chat model answers the text. The chat model here is the builtin echo, so the
answer shows exactly what the chat model was given."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import ChatCompletionEvent, UsageRecord
from tests.audio.conftest import lent_app
from tests.audio.speech import shipped, wer
from tests.support.app_fixtures import make_client

pytest.importorskip("av")

MODEL = "hearing-echo"
CATALOG = f"""
[[models]]
id = "{MODEL}"
engine = "audio_chat"
options = {{ chat_model = "maestrale-echo", transcription_model = "whisper-tiny-en" }}
capabilities = ["completion_chat", "audio", "audio_transcription"]
"""
CLIP = shipped()["report.wav"]
AUDIO = base64.b64encode(CLIP.data).decode()


@pytest.fixture
async def app(database_url: str, tmp_path: Path, whisper: Any) -> AsyncIterator[FastAPI]:
    catalog = tmp_path / "models.toml"
    catalog.write_text(CATALOG)
    async with lent_app(database_url, tmp_path / "data", whisper, models=catalog) as application:
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(app) as c:
        yield c


def spoken(*chunks: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": list(chunks)}]


async def test_audio_is_transcribed_then_answered_and_both_calls_are_accounted(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    messages = spoken(
        {"type": "text", "text": "Summarise:"}, {"type": "input_audio", "input_audio": AUDIO}
    )
    response = await client.post(
        "/v1/chat/completions", json={"model": MODEL, "messages": messages}
    )
    assert response.status_code == 200, response.text
    answer = response.json()["choices"][0]["message"]["content"]
    assert answer.startswith("echo: Summarise:\n")
    heard = answer.removeprefix("echo: Summarise:\n")
    assert wer(CLIP.text, heard) <= 0.25, answer
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        rows = (await work.session.execute(select(UsageRecord))).scalars().all()
        events = (await work.session.execute(select(ChatCompletionEvent))).scalars().all()
    by_endpoint = {row.endpoint: row for row in rows}
    assert sorted(by_endpoint) == ["audio_transcriptions", "chat"] and len(rows) == 2
    assert 3.8 < by_endpoint["audio_transcriptions"].audio_seconds < 4.0
    assert {row.model for row in rows} == {MODEL}
    assert len({row.correlation_id for row in rows}) == 1
    # The event keeps what the chat model read: the transcript, not the audio.
    [event] = events
    content = event.request_messages[0]["content"]
    assert content[0] == {"type": "text", "text": "Summarise:"}
    assert content[1] == {"type": "text", "text": heard}


async def test_streamed_chat_hears_too(client: httpx.AsyncClient) -> None:
    data_url = f"data:audio/wav;base64,{AUDIO}"
    body = {
        "model": MODEL,
        "stream": True,
        "messages": spoken({"type": "input_audio", "input_audio": data_url}),
    }
    response = await client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    frames = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    text = "".join(
        choice["delta"].get("content") or ""
        for frame in frames[:-1]
        for choice in json.loads(frame)["choices"]
    )
    assert text.startswith("echo: ")
    assert wer(CLIP.text, text.removeprefix("echo: ")) <= 0.25, text


@pytest.mark.parametrize(
    ("audio", "status", "needle"),
    [
        ("not base64 !", 400, "base64"),
        ("", 400, "input_audio"),
        (base64.b64encode(b"not audio at all").decode(), 400, "invalid_audio"),
        ({"data": 5}, 400, "input_audio"),
        ("data:audio/wav,plain", 400, "base64"),
    ],
)
async def test_bad_audio_is_refused(
    app: FastAPI, client: httpx.AsyncClient, audio: Any, status: int, needle: str
) -> None:
    body = {"model": MODEL, "messages": spoken({"type": "input_audio", "input_audio": audio})}
    response = await client.post("/v1/chat/completions", json=body)
    assert response.status_code == status, response.text
    assert needle in response.text
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        rows = (await work.session.execute(select(UsageRecord))).scalars().all()
    assert all(row.endpoint == "audio_transcriptions" for row in rows)  # the chat never ran


async def test_the_model_transcribes_under_its_own_name(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/audio/transcriptions",
        data={"model": MODEL},
        files={"file": ("report.wav", CLIP.data)},
    )
    assert response.status_code == 200, response.text
    assert wer(CLIP.text, response.json()["text"]) <= 0.25


async def test_conversations_do_not_drop_the_audio(client: httpx.AsyncClient) -> None:
    """Conversations do not transcribe: audio reaching the chat model is refused, not lost."""
    response = await client.post(
        "/v1/conversations",
        json={
            "model": MODEL,
            "inputs": [
                {"role": "user", "content": [{"type": "input_audio", "input_audio": AUDIO}]}
            ],
        },
    )
    assert response.status_code == 400, response.text
    assert "audio" in response.text


def test_the_catalog_checks_what_an_audio_chat_entry_names() -> None:
    from maestrale.engines.registry import EngineRegistry
    from maestrale.engines.specs import CatalogError, ModelSpec

    echo = ModelSpec(id="echo", engine="builtin", capabilities=["completion_chat"])
    ears = ModelSpec(id="ears", engine="builtin", capabilities=["audio_transcription"])

    def hearing(**fields: Any) -> ModelSpec:
        values: dict[str, Any] = {
            "id": "hearing",
            "engine": "audio_chat",
            "options": {"chat_model": "echo", "transcription_model": "ears"},
            "capabilities": ["completion_chat", "audio", "audio_transcription"],
            **fields,
        }
        return ModelSpec.model_validate(values)

    # Built after the models it names, wherever it stands; listed in the catalog's order.
    registry = EngineRegistry([hearing(), echo, ears])
    assert [spec.id for spec in registry.specs] == ["hearing", "echo", "ears"]
    assert registry.resolve("hearing") is not None
    # A named model that is not served: skipped when optional, an error otherwise.
    assert EngineRegistry([hearing(optional=True), echo]).resolve("hearing") is None
    with pytest.raises(CatalogError, match="not served"):
        EngineRegistry([hearing(), echo])
    # Capabilities its models do not have, or audio without transcription, are refused.
    with pytest.raises(CatalogError, match="audio_transcription_realtime"):
        EngineRegistry(
            [
                hearing(capabilities=["audio_transcription_realtime", "audio_transcription"]),
                echo,
                ears,
            ]
        )
    with pytest.raises(CatalogError, match="audio"):
        EngineRegistry([hearing(capabilities=["completion_chat", "audio"]), echo, ears])
