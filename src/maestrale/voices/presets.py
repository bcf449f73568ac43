"""Preset voices: the voices each served speech model ships (capability `audio_speech`), with
a sample of each, that voice speaking a fixed sentence.

A preset voice's id is the engine's own name for it, stable across restarts; when two models
ship a voice of the same name, the first model of the catalog lists it. Samples are synthesized
on first request, straight through the engine (a platform operation, not a client's model
call), and kept in memory by the app (`SampleCache`), since they never change.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime

from maestrale.core.errors import AppError
from maestrale.engines.protocols import SpeechEngine
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.speech_types import SpeechRequest
from maestrale.engines.types import EngineError
from maestrale.gateway.call import engine_failure
from maestrale.gateway.capabilities import SPEECH
from maestrale.voices.sample import wav_bytes

SAMPLE_SENTENCE = "Hello! This is how I sound when I read your text aloud."
# When the catalog gives a model no `created` date.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class PresetVoice:
    id: str
    name: str
    languages: tuple[str, ...]
    gender: str | None
    description: str | None
    model: str  # the catalog id of the model that ships it
    upstream_model: str  # what the engine is asked to speak
    created_at: datetime
    engine: SpeechEngine


@dataclass(slots=True)
class SampleCache:
    """The app's cache of preset samples (WAV bytes by voice id); one per process."""

    samples: dict[str, bytes] = field(default_factory=dict)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)


class PresetVoices:
    """The preset voices of the app's engine registry."""

    def __init__(self, registry: EngineRegistry, cache: SampleCache) -> None:
        self.registry = registry
        self.cache = cache

    def all(self) -> list[PresetVoice]:
        """Every preset voice, in the catalog's order of models (the real engines' first) then
        each engine's order."""
        out: dict[str, PresetVoice] = {}
        for spec in self.registry.serving(SPEECH.catalog_name):
            resolved = self.registry.resolve(spec.id)
            engine = SPEECH.engine_of(resolved.engine) if resolved is not None else None
            if engine is None:
                continue
            upstream = spec.upstream_model or spec.id
            created = datetime.fromtimestamp(spec.created, UTC) if spec.created else EPOCH
            try:
                voices = engine.voices(upstream)
            except EngineError:
                continue  # an upstream that cannot list its voices lists none
            for voice in voices:
                out.setdefault(
                    voice.id,
                    PresetVoice(
                        voice.id,
                        voice.name,
                        voice.languages,
                        voice.gender,
                        voice.description,
                        spec.id,
                        upstream,
                        created,
                        engine,
                    ),
                )
        return list(out.values())

    def get(self, voice_id: str) -> PresetVoice | None:
        return next((voice for voice in self.all() if voice.id == voice_id), None)

    async def sample(self, voice: PresetVoice) -> bytes:
        """The voice speaking `SAMPLE_SENTENCE`, as WAV; synthesized once per process."""
        cached = self.cache.samples.get(voice.id)
        if cached is not None:
            return cached
        lock = self.cache.locks.setdefault(voice.id, asyncio.Lock())
        async with lock:
            cached = self.cache.samples.get(voice.id)
            if cached is None:
                cached = self.cache.samples[voice.id] = await _synthesize(voice)
        return cached


async def _synthesize(voice: PresetVoice) -> bytes:
    request = SpeechRequest(model=voice.upstream_model, text=SAMPLE_SENTENCE, voice=voice.id)
    pcm = bytearray()
    rate: int | None = None
    try:
        async for chunk in voice.engine.synthesize(request):
            if rate is not None and chunk.sample_rate != rate:
                raise EngineError(502, "the engine changed its sample rate within one synthesis")
            rate = chunk.sample_rate
            pcm += chunk.pcm
    except EngineError as exc:
        raise engine_failure(exc, voice.model) from exc
    if rate is None or not pcm:
        raise AppError(
            f"model {voice.model} produced no audio for voice {voice.id}",
            code="upstream_error",
            status_code=502,
        )
    return wav_bytes(bytes(pcm), rate)
