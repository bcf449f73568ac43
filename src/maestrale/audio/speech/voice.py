"""The voice a synthesis speaks in: the engine's default, one of its preset voices, a custom
voice of the caller's workspace (its stored sample) or a sample sent with the request
(`ref_audio`). A sample goes only to an engine that clones; the others refuse it with a 400
rather than speak in another voice than the one asked for."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Protocol

import anyio

from maestrale.config import Settings
from maestrale.core.errors import BadRequest, PayloadTooLarge
from maestrale.engines.protocols import SpeechEngine
from maestrale.voices.sample import InvalidSample, normalize


class UnknownVoice(BadRequest):
    code = "unknown_voice"


class CloningUnsupported(BadRequest):
    code = "voice_cloning_unsupported"


class VoiceSamples(Protocol):
    async def reference_sample(self, voice_id: str) -> bytes | None:
        """The sample of the workspace's custom voice `voice_id`, None when it has none."""
        ...


@dataclass(frozen=True, slots=True)
class ChosenVoice:
    preset: str | None = None  # an engine voice id; None: its default
    reference: bytes | None = None  # a sample to clone
    label: str | None = None  # what the session reports as its voice


def ref_audio_bytes(text: str, settings: Settings, param: str = "ref_audio") -> bytes:
    """The bytes of a base64 sample: 400 when it is not base64 or empty, 413 over the size
    limit of voice samples (checked on the text's length first)."""
    limit = settings.voice_sample_max_bytes
    if len(text) > (limit + 2) // 3 * 4 + 4:
        raise PayloadTooLarge(
            f"{param} exceeds the limit of {limit} bytes", code="voice_sample_too_large"
        )
    try:
        data = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(
            f"{param} is not valid base64", code="invalid_ref_audio", param=param
        ) from exc
    if not data:
        raise BadRequest(f"{param} is empty", code="invalid_ref_audio", param=param)
    return data


async def choose_voice(
    engine: SpeechEngine,
    model: str,
    upstream: str,
    voice_id: str | None,
    ref_audio: str | None,
    voices: VoiceSamples | None,
    settings: Settings,
    *,
    voice_param: str = "voice_id",
) -> ChosenVoice:
    """The voice of `voice_id` or `ref_audio` (at most one) on `engine`: 400 `unknown_voice` for
    a voice neither the engine nor the workspace has, 400 `voice_cloning_unsupported` for a
    sample given to an engine that does not clone, 400/413 for a sample that is not audio or is
    too long. The sample is decoded and normalized off the event loop."""
    if voice_id is not None and ref_audio is not None:
        raise BadRequest(
            f"send {voice_param} or ref_audio, not both", code="ambiguous_voice", param="ref_audio"
        )
    if voice_id is None and ref_audio is None:
        return ChosenVoice()
    if voice_id is not None:
        if voice_id in {voice.id for voice in engine.voices(upstream)}:
            return ChosenVoice(preset=voice_id, label=voice_id)
        sample = await voices.reference_sample(voice_id) if voices is not None else None
        if sample is None:
            raise UnknownVoice(
                f"voice {voice_id!r} is neither a voice of model {model!r} nor a custom voice of "
                "this workspace",
                param=voice_param,
            )
        _check_clones(engine, model, voice_param)
        return ChosenVoice(reference=sample, label=voice_id)
    assert ref_audio is not None
    _check_clones(engine, model, "ref_audio")
    data = ref_audio_bytes(ref_audio, settings)
    try:
        normalized = await anyio.to_thread.run_sync(
            normalize, data, settings.voice_sample_max_seconds
        )
    except InvalidSample as exc:
        exc.param = "ref_audio"
        raise
    return ChosenVoice(reference=normalized.wav)


def _check_clones(engine: SpeechEngine, model: str, param: str) -> None:
    if not engine.clones:
        raise CloningUnsupported(
            f"model {model!r} cannot speak in a cloned voice (a custom voice or ref_audio): use "
            "one of its preset voices, or a model that clones",
            param=param,
        )
