"""A hosted engine through the hub: the proxy offers the engine's capabilities and nothing else,
and a realtime transcription's audio is fed across as it comes (Whisper on a clip in pieces)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from maestrale.engines.protocols import (
    ChatEngine,
    RealtimeTranscriptionEngine,
    TranscriptionEngine,
)
from maestrale.engines.specs import ModelSpec
from maestrale.engines.transcription_types import (
    PcmFormat,
    RealtimeInput,
    RealtimeTranscriptionRequest,
    TranscriptionRequest,
    TranscriptionResult,
)
from maestrale.hub.engines import EngineHost, RemoteEngine, remote_factories
from tests.audio.conftest import WHISPER_ID
from tests.audio.speech import shipped, wer
from tests.hub.hubs import running_hub

np = pytest.importorskip("numpy")


async def test_whisper_through_the_hub(
    whisper: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from maestrale.engines.local.audio_decode import decode

    spec = ModelSpec(id=WHISPER_ID, engine="faster_whisper")
    host = EngineHost([spec], factories={"faster_whisper": lambda _: whisper})
    folder: Path = tmp_path_factory.mktemp("hub")
    calls = {"engine.call": host.call}
    async with running_hub(folder, calls, {"engine.stream": host.stream}) as (_, client):
        proxy = remote_factories(client, host.describe())["faster_whisper"](spec)
        assert isinstance(proxy, RemoteEngine)
        assert isinstance(proxy, TranscriptionEngine)
        assert isinstance(proxy, RealtimeTranscriptionEngine)
        assert not isinstance(proxy, ChatEngine)

        clip = shipped()["report.wav"]
        whole = await proxy.transcribe(TranscriptionRequest(model=WHISPER_ID, audio=clip.data))
        assert wer(clip.text, whole.text) <= 0.25, whole.text

        pcm = (decode(clip.data, 60).samples * 32767).astype("<i2").tobytes()
        queue: asyncio.Queue[RealtimeInput] = asyncio.Queue()
        request = RealtimeTranscriptionRequest(
            model=WHISPER_ID, audio_format=PcmFormat(), audio=queue
        )

        async def feed() -> None:  # as a client sends it: while the transcription runs
            for i in range(0, len(pcm), 16_000):
                queue.put_nowait(pcm[i : i + 16_000])
                await asyncio.sleep(0)
            queue.put_nowait(None)

        feeding = asyncio.create_task(feed())
        events = [event async for event in proxy.transcribe_realtime(request)]
        await feeding
        result = events[-1]
        assert isinstance(result, TranscriptionResult)
        assert wer(clip.text, result.text) <= 0.25, result.text
