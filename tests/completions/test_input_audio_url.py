"""`input_audio` given as a URL (the SDK's audio chat examples pass one): fetched through the SSRF
guard, as `document_url` is, then transcribed. The transcription model here is a stand-in that
says what it was given, so the test sees exactly which bytes the fetch handed over; the chat
model is the builtin echo."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from aiohttp import web
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.engines.registry import ResolvedModel
from maestrale.engines.transcription_types import (
    TranscriptionEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from tests.support import app_fixtures

pytest.importorskip("faster_whisper")  # the audio_chat entry needs its transcription model served

MODEL = "hearing-echo"
TRANSCRIBER = "whisper-tiny-en"
CATALOG = f"""
[[models]]
id = "{MODEL}"
engine = "audio_chat"
options = {{ chat_model = "maestrale-echo", transcription_model = "{TRANSCRIBER}" }}
capabilities = ["completion_chat", "audio", "audio_transcription"]
"""
CLIP = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(200))


class Describer:
    """Transcribes by describing the audio it was handed."""

    def __init__(self) -> None:
        self.calls = 0

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        self.calls += 1
        text = f"{len(request.audio)} bytes {request.content_type} {request.filename}"
        assert request.audio == CLIP
        return TranscriptionResult(text=text, language="en", segments=[], audio_seconds=1.0)

    async def transcribe_stream(
        self, request: TranscriptionRequest
    ) -> AsyncIterator[TranscriptionEvent]:
        yield await self.transcribe(request)


@pytest.fixture
async def audio_site() -> AsyncIterator[str]:
    """A local HTTP server: a WAV clip, an HTML page, a clip over the size bound."""

    async def clip(_: web.Request) -> web.Response:
        return web.Response(body=CLIP, content_type="audio/wav")

    async def page(_: web.Request) -> web.Response:
        return web.Response(text="<html>not audio</html>", content_type="text/html")

    async def big(_: web.Request) -> web.Response:
        return web.Response(body=CLIP * 100, content_type="audio/wav")

    site_app = web.Application()
    site_app.router.add_get("/bcn weather.wav", clip)
    site_app.router.add_get("/page", page)
    site_app.router.add_get("/big.wav", big)
    runner = web.AppRunner(site_app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    catalog = tmp_path / "models.toml"
    catalog.write_text(CATALOG)
    application = create_app(
        app_fixtures.test_settings(database_url, tmp_path / "data", models=catalog)
    )
    async with application.router.lifespan_context(application):
        yield application


async def test_input_audio_url_is_fetched_through_the_ssrf_guard(
    app: FastAPI, audio_site: str
) -> None:
    registry = app.state.services.engines
    resolved = registry.resolve(TRANSCRIBER)
    assert resolved is not None
    describer = Describer()
    registry._by_name[TRANSCRIBER] = ResolvedModel(resolved.spec, describer)

    async def chat(url: str) -> httpx.Response:
        content = [{"type": "input_audio", "input_audio": url}]
        body = {"model": MODEL, "messages": [{"role": "user", "content": content}]}
        async with app_fixtures.make_client(app) as client:
            return await client.post("/v1/chat/completions", json=body)

    # By default a private address is refused, before any transcription.
    refused = await chat(f"{audio_site}/bcn%20weather.wav")
    assert refused.status_code == 400, refused.text
    assert refused.json()["code"] == "url_not_allowed" and "127.0.0.1" in refused.json()["message"]
    local = await chat("http://localhost:9/clip.mp3")
    assert local.status_code == 400 and local.json()["code"] == "url_not_allowed"
    other = await chat("file:///etc/passwd")
    assert other.status_code == 400 and other.json()["code"] == "url_not_allowed"
    assert describer.calls == 0

    gateway = app.state.services.gateway
    gateway.fetch_policy = replace(gateway.fetch_policy, allow_private=True, max_bytes=4096)
    heard = await chat(f"{audio_site}/bcn%20weather.wav")
    assert heard.status_code == 200, heard.text
    answer = heard.json()["choices"][0]["message"]["content"]
    assert answer == f"echo: {len(CLIP)} bytes audio/wav bcn weather.wav"
    page = await chat(f"{audio_site}/page")
    assert page.status_code == 400 and page.json()["code"] == "invalid_audio"
    assert "text/html, not audio" in page.json()["message"]
    big = await chat(f"{audio_site}/big.wav")
    assert big.status_code == 413 and "4096-byte" in big.json()["message"]
    missing = await chat(f"{audio_site}/missing.wav")
    assert missing.status_code == 400 and missing.json()["code"] == "fetch_failed"
    assert describer.calls == 1
