"""Speech synthesis: check the request, open and admit the call through the gateway (limits,
spend, tracing and accounting as every model call), choose the voice, and run the engine's
stream of PCM chunks, tallied for accounting: the characters spoken as prompt tokens and the
audio's seconds."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from maestrale.audio.speech.schemas import SpeechBody
from maestrale.audio.speech.voice import VoiceSamples, choose_voice
from maestrale.config import Settings
from maestrale.core.errors import BadRequest
from maestrale.engines.protocols import SpeechEngine
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.speech_types import SpeechChunk, SpeechRequest
from maestrale.engines.types import Usage
from maestrale.gateway.call import Call, Report
from maestrale.gateway.capabilities import SPEECH
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller


class UnsupportedOption(BadRequest):
    code = "unsupported_option"


class SpeechTally:
    """The accounting of a synthesis: its characters, and the seconds of audio it produced
    (what was produced, also when the stream failed or was abandoned)."""

    __slots__ = ("characters", "seconds")

    def __init__(self, characters: int = 0) -> None:
        self.characters = characters
        self.seconds = 0.0

    def add(self, item: SpeechChunk) -> None:
        self.seconds += item.seconds

    def report(self) -> Report:
        return Report(Usage(prompt_tokens=self.characters), audio_seconds=self.seconds)

    def usage_body(self) -> dict[str, Any]:
        """UsageInfo: characters as prompt tokens. `prompt_audio_seconds` counts input audio,
        which a synthesis has none of."""
        return {
            "prompt_tokens": self.characters,
            "completion_tokens": 0,
            "total_tokens": self.characters,
            "prompt_audio_seconds": None,
        }


def default_model(registry: EngineRegistry) -> str:
    """The model of a request that names none: the catalog's first speech model, a real engine
    before the builtin test double."""
    speaking = registry.serving(SPEECH.catalog_name)
    if not speaking:
        raise BadRequest("no model of this server speaks: name one", param="model")
    return speaking[0].id


def check_text(text: str, settings: Settings) -> None:
    if not text.strip():
        raise BadRequest(
            "input is empty: there is nothing to speak", code="empty_input", param="input"
        )
    limit = settings.speech_max_characters
    if len(text) > limit:
        raise BadRequest(
            f"input has {len(text)} characters; the limit is {limit}",
            code="input_too_long",
            param="input",
        )


def check_options(body: SpeechBody) -> None:
    """Refuse what would change the audio and no engine here can honour (a clear 400 rather
    than audio that silently ignored it). `expressiveness` is accepted: the engines have one
    delivery, and its absence does not change what is said nor in which voice."""
    unsupported = [
        name
        for name in ("instructions", "phoneme_hints", "conversation_history")
        if getattr(body, name)
    ]
    if unsupported:
        raise UnsupportedOption(
            f"the speech engines of this server do not support {', '.join(unsupported)}: "
            "leave it unset",
            param=unsupported[0],
        )


@dataclass(slots=True)
class Prepared:
    call: Call[SpeechEngine]
    request: SpeechRequest


class SpeechService:
    def __init__(self, gateway: Gateway, settings: Settings, voices: VoiceSamples | None) -> None:
        self.gateway = gateway
        self.settings = settings
        self.voices = voices

    async def prepare(
        self, caller: Caller, body: SpeechBody, *, correlation_id: str, source: str = "api"
    ) -> Prepared:
        """The admitted call and the engine's request: 400 for empty or too long text, an
        unsupported option, an unknown voice or a sample the model cannot clone; 404 for an
        unknown model. The custom voice's sample is read before the engine runs; no
        transaction stays open across the call (the gateway releases it)."""
        check_text(body.input, self.settings)
        check_options(body)
        model = body.model or default_model(self.gateway.registry)
        call = await self.gateway.open(
            caller, model, SPEECH, correlation_id=correlation_id, source=source
        )
        call.extra = body.metadata or {}
        voice_id, voice_param = body.voice_name()
        chosen = await choose_voice(
            call.engine,
            call.model,
            call.upstream,
            voice_id,
            body.ref_audio,
            self.voices,
            self.settings,
            voice_param=voice_param,
        )
        await self.gateway.admit(call, 0)
        request = SpeechRequest(
            model=call.upstream,
            text=body.input,
            voice=chosen.preset,
            reference=chosen.reference,
            speed=body.speed or 1.0,
        )
        return Prepared(call, request)

    async def start(
        self, prepared: Prepared, tally: SpeechTally
    ) -> tuple[SpeechChunk | None, AsyncGenerator[SpeechChunk, None]]:
        """Start the synthesis: its first chunk (a failure before it is raised as the client
        sees it) and the rest, accounted when it ends, fails or is closed."""
        request = prepared.request
        return await self.gateway.stream(
            prepared.call, lambda engine: engine.synthesize(request), tally
        )
