"""Chat with audio on a model that hears through transcription (`HearsByTranscription`, e.g. the
local Voxtral names): each `input_audio` chunk is transcribed by the same model — a
transcription call of its own, opened, limited and accounted by the gateway like one of
/v1/audio/transcriptions — and replaced by a text chunk of its transcript before the chat model
sees the messages (and before guardrails read them)."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from maestrale.audio.service import report
from maestrale.completions.schemas import Message
from maestrale.completions.validation import InvalidRequest
from maestrale.engines.transcription_types import TranscriptionRequest
from maestrale.gateway.capabilities import TRANSCRIPTION
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller


def has_audio(messages: list[Message]) -> bool:
    return any(
        isinstance(m.content, list) and any(c["type"] == "input_audio" for c in m.content)
        for m in messages
    )


def audio_of(chunk: dict[str, Any], where: str) -> bytes:
    """The audio of an `input_audio` chunk: base64 (the SDK's `AudioChunk`), a base64 `data:`
    URL, or OpenAI's `{"data": base64}`; 400 for anything else."""
    value = chunk.get("input_audio")
    if isinstance(value, dict):
        value = value.get("data")
    if not isinstance(value, str) or not value:
        raise InvalidRequest(
            f"{where}: `input_audio` must be the audio in base64", param=f"{where}.input_audio"
        )
    if value[:5].lower() == "data:":
        header, _, value = value.partition(",")
        if not header.lower().endswith(";base64"):
            raise InvalidRequest(
                f"{where}: an `input_audio` data: URL must be base64", param=f"{where}.input_audio"
            )
    try:
        audio = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequest(
            f"{where}: `input_audio` is not valid base64: {exc}", param=f"{where}.input_audio"
        ) from exc
    if not audio:
        raise InvalidRequest(f"{where}: `input_audio` is empty", param=f"{where}.input_audio")
    return audio


async def _transcribe(
    gateway: Gateway, caller: Caller, model: str, audio: bytes, correlation_id: str, source: str
) -> str:
    call = await gateway.open(
        caller, model, TRANSCRIPTION, correlation_id=correlation_id, source=source
    )
    await gateway.admit(call, 0)
    request = TranscriptionRequest(model=call.upstream, audio=audio)
    result = await gateway.run(call, lambda engine: engine.transcribe(request), report)
    return result.text


async def hear(
    gateway: Gateway,
    caller: Caller,
    model: str,
    messages: list[Message],
    *,
    correlation_id: str,
    source: str,
) -> list[Message]:
    """`messages` with every `input_audio` chunk replaced by its transcript by `model` (see the
    module's docstring): 400 for audio that is not base64 or does not decode, 413 for audio
    over the duration limit, as the transcription endpoint answers."""
    heard: list[Message] = []
    for i, message in enumerate(messages):
        if not isinstance(message.content, list):
            heard.append(message)
            continue
        content: list[dict[str, Any]] = []
        for j, chunk in enumerate(message.content):
            if chunk["type"] != "input_audio":
                content.append(chunk)
                continue
            audio = audio_of(chunk, f"messages[{i}].content[{j}]")
            text = await _transcribe(gateway, caller, model, audio, correlation_id, source)
            content.append({"type": "text", "text": text})
        heard.append(message.model_copy(update={"content": content}))
    return heard
