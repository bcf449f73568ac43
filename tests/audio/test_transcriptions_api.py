"""POST /v1/audio/transcriptions over HTTP: sources (file part, file_url, file_id, form-encoded),
formats, plain and streamed answers, usage, and the error cases (400, 404, 413, 415, 422)."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import UsageRecord
from tests.audio.speech import shipped, wer
from tests.support.app_fixtures import TenantKey, make_client

pytest.importorskip("av")

URL = "/v1/audio/transcriptions"
MODEL = "whisper-tiny-en"
HELLO = "report.wav"


def clip(name: str = HELLO) -> tuple[bytes, str]:
    found = shipped()[name]
    return found.data, found.text


async def transcribe(client: httpx.AsyncClient, name: str = HELLO, **fields: Any) -> httpx.Response:
    data, _ = clip(name)
    form = {"model": MODEL, **fields}
    return await client.post(URL, data=form, files={"file": (name, data)})


def sse_events(body: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


@pytest.mark.parametrize(
    "name", ["report.wav", "report.mp3", "report.ogg", "report.flac", "report.m4a"]
)
async def test_each_format_is_transcribed(client: httpx.AsyncClient, name: str) -> None:
    response = await transcribe(client, name)
    assert response.status_code == 200, response.text
    body = response.json()
    _, reference = clip(name)
    assert body["model"] == MODEL
    assert body["language"] == "en"
    assert wer(reference, body["text"]) <= 0.25, body["text"]
    assert body["segments"], body
    for segment in body["segments"]:
        assert segment["type"] == "transcription_segment"
        assert 0 <= segment["start"] < segment["end"] <= 4.5
        assert segment["speaker_id"] is None
    assert body["usage"]["prompt_audio_seconds"] == 4  # a 3.5-4 s clip, started seconds count
    assert body["usage"]["total_tokens"] == body["usage"]["completion_tokens"] > 0


async def test_platform_alias_and_word_timestamps(client: httpx.AsyncClient) -> None:
    response = await client.post(
        URL,
        data={"model": "voxtral-mini-latest", "timestamp_granularities": ["word"]},
        files={"file": (HELLO, clip()[0])},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model"] == "voxtral-mini-latest"
    # Word granularity alone: one chunk per word, in order and within the audio.
    words = body["segments"]
    assert len(words) >= 8
    assert " ".join(w["text"] for w in words).split() == body["text"].split()
    starts = [w["start"] for w in words]
    assert starts == sorted(starts)
    both = await transcribe(client, timestamp_granularities=["segment", "word"])
    segment = both.json()["segments"][0]
    assert segment["words"] and all(w["start"] >= segment["start"] for w in segment["words"])


async def test_diarize_is_accepted_without_speaker_labels(client: httpx.AsyncClient) -> None:
    response = await transcribe(client, diarize="true", language="en", temperature="0.0")
    assert response.status_code == 200, response.text
    assert all(s["speaker_id"] is None for s in response.json()["segments"])


async def test_stream_sends_the_sdk_event_types(client: httpx.AsyncClient) -> None:
    response = await transcribe(client, stream="true")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "transcription.language"
    assert events[0][1] == {"type": "transcription.language", "audio_language": "en"}
    assert kinds[-1] == "transcription.done"
    assert "transcription.text.delta" in kinds and "transcription.segment" in kinds
    assert all(data["type"] == kind for kind, data in events)
    done = events[-1][1]
    deltas = "".join(d["text"] for k, d in events if k == "transcription.text.delta")
    assert deltas == done["text"]
    assert wer(clip()[1], done["text"]) <= 0.25
    assert done["usage"]["prompt_audio_seconds"] == 4
    segments = [d for k, d in events if k == "transcription.segment"]
    assert [s["text"] for s in segments] == [s["text"] for s in done["segments"]]


async def test_usage_records_the_audio_seconds(app: FastAPI, client: httpx.AsyncClient) -> None:
    assert (await transcribe(client)).status_code == 200
    assert (await transcribe(client, stream="true")).status_code == 200
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        rows = (await work.session.execute(select(UsageRecord))).scalars().all()
    assert [r.endpoint for r in rows] == ["audio_transcriptions"] * 2
    for row in rows:
        assert row.status_code == 200
        assert row.model == MODEL
        assert 3.4 < row.audio_seconds < 4.1
        assert row.completion_tokens > 0


async def test_file_id_and_form_encoded_body(client: httpx.AsyncClient) -> None:
    data, reference = clip("report.mp3")
    upload = await client.post(
        "/v1/files", data={"purpose": "audio"}, files={"file": ("report.mp3", data)}
    )
    assert upload.status_code == 200, upload.text
    # No file part: sent as application/x-www-form-urlencoded, as the SDK's httpx does.
    response = await client.post(URL, data={"model": MODEL, "file_id": upload.json()["id"]})
    assert response.request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert response.status_code == 200, response.text
    assert wer(reference, response.json()["text"]) <= 0.25


async def test_file_id_of_another_workspace_is_not_found(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    async with make_client(app, other.key) as theirs:
        upload = await theirs.post(
            "/v1/files", data={"purpose": "audio"}, files={"file": (HELLO, clip()[0])}
        )
    assert upload.status_code == 200
    response = await client.post(URL, data={"model": MODEL, "file_id": upload.json()["id"]})
    assert response.status_code == 404
    assert response.json()["code"] == "file_not_found"


async def test_data_url_is_transcribed(client: httpx.AsyncClient) -> None:
    data, reference = clip("report.ogg")
    url = "data:audio/ogg;base64," + base64.b64encode(data).decode()
    response = await client.post(URL, data={"model": MODEL, "file_url": url})
    assert response.status_code == 200, response.text
    assert wer(reference, response.json()["text"]) <= 0.25


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/clip.wav",
        "http://localhost:9/clip.wav",
        "http://10.0.0.1/clip.wav",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:9/clip.wav",
    ],
)
async def test_file_url_to_private_addresses_is_refused(
    client: httpx.AsyncClient, url: str
) -> None:
    response = await client.post(URL, data={"model": MODEL, "file_url": url})
    assert response.status_code == 400
    assert response.json()["code"] == "url_not_allowed"


@pytest.fixture
async def clip_server() -> AsyncIterator[str]:
    """A local HTTP server with the shipped clips."""

    async def serve(request: web.Request) -> web.StreamResponse:
        return web.Response(body=shipped()[request.match_info["name"]].data)

    application = web.Application()
    application.router.add_get("/{name}", serve)
    runner = web.AppRunner(application)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_file_url_is_fetched_when_private_addresses_are_allowed(
    app: FastAPI, client: httpx.AsyncClient, clip_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = await client.post(URL, data={"model": MODEL, "file_url": f"{clip_server}/{HELLO}"})
    assert refused.status_code == 400
    assert refused.json()["code"] == "url_not_allowed"
    monkeypatch.setattr(app.state.settings, "fetch_allow_private", True)
    response = await client.post(URL, data={"model": MODEL, "file_url": f"{clip_server}/{HELLO}"})
    assert response.status_code == 200, response.text
    assert wer(clip()[1], response.json()["text"]) <= 0.25
    # The size limit holds for fetched audio too.
    monkeypatch.setattr(app.state.settings, "audio_max_bytes", 1000)
    too_big = await client.post(URL, data={"model": MODEL, "file_url": f"{clip_server}/{HELLO}"})
    assert too_big.status_code == 413


async def test_undecodable_audio_is_400(client: httpx.AsyncClient) -> None:
    for payload in (b"this is not audio at all", b"RIFF\x00\x00\x00\x00WAVEfmt garbage" * 4):
        response = await client.post(URL, data={"model": MODEL}, files={"file": ("x.wav", payload)})
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "invalid_audio"
    streamed = await client.post(
        URL, data={"model": MODEL, "stream": "true"}, files={"file": ("x.mp3", b"nope")}
    )
    assert streamed.status_code == 400
    assert streamed.json()["code"] == "invalid_audio"


async def test_oversized_or_overlong_audio_is_413(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app.state.settings, "audio_max_bytes", 10_000)
    response = await transcribe(client)
    assert response.status_code == 413
    assert response.json()["code"] == "audio_too_large"
    data_url = "data:audio/wav;base64," + base64.b64encode(clip()[0]).decode()
    response = await client.post(URL, data={"model": MODEL, "file_url": data_url})
    assert response.status_code == 413
    monkeypatch.setattr(app.state.settings, "audio_max_bytes", 10_000_000)
    monkeypatch.setattr(app.state.settings, "audio_max_seconds", 2.0)
    response = await transcribe(client, "report.flac")
    assert response.status_code == 413
    assert response.json()["code"] == "audio_too_long"


async def test_request_errors(client: httpx.AsyncClient) -> None:
    missing = await client.post(URL, data={"model": MODEL})
    assert (missing.status_code, missing.json()["code"]) == (400, "missing_audio")
    both = await transcribe(client, file_url="http://example.com/a.wav")
    assert (both.status_code, both.json()["code"]) == (400, "ambiguous_audio")
    unknown = await transcribe(client, model="no-such-model")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "model_not_found")
    chat_only = await transcribe(client, model="maestrale-echo")
    assert (chat_only.status_code, chat_only.json()["code"]) == (400, "model_capability_missing")
    french = await transcribe(client, language="fr")
    assert (french.status_code, french.json()["code"]) == (400, "unsupported_language")
    invalid = await transcribe(
        client,
        temperature="hot",
        timestamp_granularities=["char"],
        speaker_references='{"ann": "UklGRg=="}',
    )
    assert invalid.status_code == 422
    locs = {tuple(d["loc"]) for d in invalid.json()["detail"]}
    assert ("body", "temperature") in locs
    assert ("body", "timestamp_granularities", 0) in locs
    assert ("body", "speaker_references") in locs  # mistralai 3.x's: not ignored
    no_model = await client.post(URL, files={"file": (HELLO, clip()[0])})
    assert no_model.status_code == 422
    text = await client.post(URL, content=b"model=x", headers={"content-type": "text/plain"})
    assert text.status_code == 415
    anonymous = await client.post(URL, data={"model": MODEL}, headers={"authorization": ""})
    assert anonymous.status_code == 401


async def test_json_body_is_accepted(client: httpx.AsyncClient) -> None:
    data, reference = clip("report.flac")
    url = "data:audio/flac;base64," + base64.b64encode(data).decode()
    response = await client.post(URL, json={"model": MODEL, "file_url": url})
    assert response.status_code == 200, response.text
    assert wer(reference, response.json()["text"]) <= 0.25
