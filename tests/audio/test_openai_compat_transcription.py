"""The `openai_compat_transcription` engine against a local stub upstream: the multipart it sends
in each dialect, the answers it reads, its failures, and the whole route through the gateway."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from maestrale.app import create_app
from maestrale.engines.openai_compat.transcription import (
    TranscriptionPassthrough,
    create_engine,
)
from maestrale.engines.protocols import TranscriptionEngine
from maestrale.engines.specs import CatalogError, ModelSpec
from maestrale.engines.transcription_types import (
    LanguageDetected,
    TranscriptionRequest,
    TranscriptionResult,
)
from maestrale.engines.types import EngineError
from tests.support import app_fixtures
from tests.support.app_fixtures import make_client

AUDIO = b"ID3\x04fake mp3 bytes \x00\x01\x02"
PLATFORM_ANSWER = {
    "model": "voxtral-mini-2507",
    "text": " Hello there. ",
    "language": "en",
    "segments": [
        {
            "type": "transcription_segment",
            "text": " Hello",
            "start": 0.0,
            "end": 0.5,
            "speaker_id": "speaker_1",
        },
        {"type": "transcription_segment", "text": "there.", "start": 0.6, "end": 1.2},
    ],
    "usage": {
        "prompt_audio_seconds": 2,
        "prompt_tokens": 7,
        "completion_tokens": 3,
        "total_tokens": 10,
    },
}
VERBOSE_ANSWER = {
    "task": "transcribe",
    "language": "english",
    "duration": 1.25,
    "text": "Hello there.",
    "segments": [{"id": 0, "start": 0.0, "end": 1.2, "text": " Hello there."}],
    "words": [
        {"word": "Hello", "start": 0.0, "end": 0.5},
        {"word": "there.", "start": 0.6, "end": 1.2},
    ],
}


@dataclass
class Upstream:
    url: str
    seen: list[dict[str, Any]] = field(default_factory=list)
    answers: list[tuple[int, Any]] = field(default_factory=list)


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    state = Upstream(url="")

    async def transcriptions(request: web.Request) -> web.Response:
        form = await request.post()
        fields: dict[str, Any] = {}
        for key, value in form.items():
            if isinstance(value, web.FileField):
                fields[key] = {
                    "filename": value.filename,
                    "content_type": value.content_type,
                    "data": value.file.read(),
                }
            else:
                fields.setdefault(key, []).append(value)
        state.seen.append({"headers": request.headers.copy(), "fields": fields})
        status, body = state.answers.pop(0) if state.answers else (200, PLATFORM_ANSWER)
        text = body if isinstance(body, str) else json.dumps(body)
        return web.Response(status=status, text=text, content_type="application/json")

    application = web.Application()
    application.router.add_post("/v1/audio/transcriptions", transcriptions)
    runner = web.AppRunner(application)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    state.url = f"http://127.0.0.1:{port}/v1"
    yield state
    await runner.cleanup()


def engine_for(upstream: Upstream, **options: Any) -> TranscriptionPassthrough:
    spec = ModelSpec(
        id="relay",
        engine="openai_compat_transcription",
        base_url=upstream.url,
        api_key_env="MAESTRALE_TEST_UPSTREAM_KEY",
        options={"retry_backoff": 0.01, **options},
    )
    return create_engine(spec)


def request(**fields: Any) -> TranscriptionRequest:
    return TranscriptionRequest(
        model="voxtral-mini-2507",
        audio=AUDIO,
        filename="talk.mp3",
        content_type="audio/mpeg",
        **fields,
    )


async def test_mistral_dialect_passes_the_fields_and_the_file(
    upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAESTRALE_TEST_UPSTREAM_KEY", "sk-upstream")
    engine = engine_for(upstream)
    assert isinstance(engine, TranscriptionEngine)
    try:
        result = await engine.transcribe(
            request(
                language="en",
                temperature=0.2,
                timestamp_granularities=["segment"],
                diarize=True,
                context_bias=["Maestrale", "New_York"],
            )
        )
    finally:
        await engine.aclose()
    seen = upstream.seen[0]
    assert seen["headers"]["Authorization"] == "Bearer sk-upstream"
    fields = seen["fields"]
    assert fields["file"] == {"filename": "talk.mp3", "content_type": "audio/mpeg", "data": AUDIO}
    assert fields["model"] == ["voxtral-mini-2507"]
    assert fields["language"] == ["en"]
    assert fields["temperature"] == ["0.2"]
    assert fields["timestamp_granularities"] == ["segment"]
    assert fields["context_bias"] == ["Maestrale", "New_York"]
    assert fields["diarize"] == ["true"]
    assert "response_format" not in fields
    assert result.text == "Hello there."
    assert result.language == "en"
    assert result.audio_seconds == 2
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (7, 3)
    assert [(s.text, s.start, s.end, s.speaker_id) for s in result.segments] == [
        ("Hello", 0.0, 0.5, "speaker_1"),
        ("there.", 0.6, 1.2, None),
    ]


async def test_openai_dialect_asks_for_verbose_json(upstream: Upstream) -> None:
    upstream.answers.append((200, VERBOSE_ANSWER))
    engine = engine_for(upstream, dialect="openai")
    try:
        events = [
            event
            async for event in engine.transcribe_stream(request(timestamp_granularities=["word"]))
        ]
    finally:
        await engine.aclose()
    fields = upstream.seen[0]["fields"]
    assert fields["response_format"] == ["verbose_json"]
    assert fields["timestamp_granularities[]"] == ["word"]
    assert "Authorization" not in upstream.seen[0]["headers"]  # no key configured
    assert events[0] == LanguageDetected("en")
    result = events[-1]
    assert isinstance(result, TranscriptionResult)
    assert result.audio_seconds == 1.25
    assert [w.text for w in result.segments[0].words] == ["Hello", "there."]


async def test_upstream_failures_are_engine_errors(upstream: Upstream) -> None:
    engine = engine_for(upstream)
    try:
        upstream.answers.append((400, {"message": "file format not supported"}))
        with pytest.raises(EngineError) as caught:
            await engine.transcribe(request())
        assert caught.value.status == 400
        assert "file format not supported" in caught.value.message
        upstream.answers.extend([(503, {"message": "busy"}), (200, PLATFORM_ANSWER)])
        assert (await engine.transcribe(request())).text == "Hello there."  # retried once
        upstream.answers.append((200, "not json"))
        with pytest.raises(EngineError) as caught:
            await engine.transcribe(request())
        assert caught.value.status == 502
        upstream.answers.append((200, {"no": "text"}))
        with pytest.raises(EngineError) as caught:
            await engine.transcribe(request())
        assert caught.value.status == 502
    finally:
        await engine.aclose()


def test_bad_catalog_entries_are_refused() -> None:
    with pytest.raises(CatalogError, match="dialect"):
        create_engine(
            ModelSpec(
                id="r",
                engine="openai_compat_transcription",
                base_url="http://x/v1",
                options={"dialect": "klingon"},
            )
        )
    with pytest.raises(CatalogError, match="base_url"):
        create_engine(ModelSpec(id="r", engine="openai_compat_transcription"))


async def test_route_relays_through_the_gateway(
    upstream: Upstream, database_url: str, tmp_path: Path
) -> None:
    catalog = tmp_path / "models.toml"
    catalog.write_text(
        "[[models]]\n"
        'id = "relay-voxtral"\n'
        'engine = "openai_compat_transcription"\n'
        f'base_url = "{upstream.url}"\n'
        'upstream_model = "voxtral-mini-2507"\n'
        'capabilities = ["audio_transcription"]\n'
    )
    settings = app_fixtures.test_settings(database_url, tmp_path / "data", models=catalog)
    application = create_app(settings)
    async with application.router.lifespan_context(application), make_client(application) as c:
        files = {"file": ("talk.mp3", AUDIO, "audio/mpeg")}
        plain = await c.post(
            "/v1/audio/transcriptions", data={"model": "relay-voxtral"}, files=files
        )
        assert plain.status_code == 200, plain.text
        assert plain.json() == {
            "model": "relay-voxtral",
            "text": "Hello there.",
            "language": "en",
            "segments": [
                {
                    "type": "transcription_segment",
                    "text": "Hello",
                    "start": 0.0,
                    "end": 0.5,
                    "score": None,
                    "speaker_id": "speaker_1",
                },
                {
                    "type": "transcription_segment",
                    "text": "there.",
                    "start": 0.6,
                    "end": 1.2,
                    "score": None,
                    "speaker_id": None,
                },
            ],
            "usage": {
                "prompt_tokens": 7,
                "completion_tokens": 3,
                "total_tokens": 10,
                "prompt_audio_seconds": 2,
            },
        }
        assert upstream.seen[0]["fields"]["model"] == ["voxtral-mini-2507"]
        upstream.answers.append((415, {"message": "unsupported"}))
        refused = await c.post(
            "/v1/audio/transcriptions", data={"model": "relay-voxtral"}, files=files
        )
        assert refused.status_code == 415
        upstream.answers.append((500, {"message": "boom"}))  # 500 is not retried
        failed = await c.post(
            "/v1/audio/transcriptions",
            data={"model": "relay-voxtral", "stream": "true"},
            files=files,
        )
        assert failed.status_code == 502
        assert failed.json()["code"] == "upstream_error"
