"""Chat with audio on a model that hears through transcription (`HearsByTranscription`, e.g. the
local Voxtral names): each `input_audio` chunk is transcribed by the same model — a
transcription call of its own, opened, limited and accounted by the gateway like one of
/v1/audio/transcriptions — and replaced by a text chunk of its transcript before the chat model
sees the messages (and before guardrails read them).

The audio is base64, or a URL (the SDK's audio chat examples pass one), fetched as a
`document_url` is (`core.fetch`: private addresses refused, the gateway's `fetch_policy` size and
time bounds), once the call is opened and no transaction is held; content served as something
other than audio (an HTML page, JSON) is refused before any transcription."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any
from urllib.parse import unquote, urlsplit

from maestrale.audio.service import report
from maestrale.completions.schemas import Message
from maestrale.completions.validation import InvalidRequest
from maestrale.core.fetch import Fetched, fetch_url
from maestrale.engines.transcription_types import TranscriptionRequest
from maestrale.gateway.capabilities import TRANSCRIPTION
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller


def has_audio(messages: list[Message]) -> bool:
    return any(
        isinstance(m.content, list) and any(c["type"] == "input_audio" for c in m.content)
        for m in messages
    )


# A scheme and `//`: a URL, never base64 (whose alphabet has no colon).
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
# Types a server gives audio under: audio/*, the video containers audio comes in (MP4, WebM,
# Ogg), and the generic binary types; anything else (text/html above all) is not audio.
_BINARY_TYPES = frozenset({"application/octet-stream", "binary/octet-stream", "application/ogg"})


def audio_url(chunk: dict[str, Any]) -> str | None:
    """The URL an `input_audio` chunk names instead of base64 audio, if any."""
    value = chunk.get("input_audio")
    if isinstance(value, dict):
        value = value.get("url") or value.get("data")
    return value if isinstance(value, str) and _URL.match(value) else None


def fetched_audio(fetched: Fetched, where: str) -> bytes:
    """The body of a fetched `input_audio` URL; 400 when it is empty or not served as audio."""
    kind = (fetched.content_type or "").lower()
    if kind and not kind.startswith(("audio/", "video/")) and kind not in _BINARY_TYPES:
        raise InvalidRequest(
            f"{where}: the `input_audio` URL serves {kind}, not audio",
            param=f"{where}.input_audio",
            code="invalid_audio",
        )
    if not fetched.content:
        raise InvalidRequest(
            f"{where}: the `input_audio` URL serves no content", param=f"{where}.input_audio"
        )
    return fetched.content


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
    gateway: Gateway,
    caller: Caller,
    model: str,
    chunk: dict[str, Any],
    where: str,
    correlation_id: str,
    source: str,
) -> str:
    url = audio_url(chunk)
    audio = None if url else audio_of(chunk, where)  # bad base64 is a 400 before any call
    call = await gateway.open(
        caller, model, TRANSCRIPTION, correlation_id=correlation_id, source=source
    )
    request = TranscriptionRequest(model=call.upstream, audio=audio or b"")
    if url is not None:  # fetched once open() ended the owner's transaction
        fetched = await fetch_url(url, gateway.fetch_policy)
        request.audio = fetched_audio(fetched, where)
        request.content_type = fetched.content_type
        name = unquote(urlsplit(fetched.url).path.rsplit("/", 1)[-1])[:200]
        request.filename = name or request.filename
    await gateway.admit(call, 0)
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
    module's docstring): 400 for audio that is not base64 or does not decode, for a URL that is
    refused (`url_not_allowed`: private addresses), fails or serves no audio, 413 for audio over
    the duration limit or a URL's content over the fetch size bound."""
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
            where = f"messages[{i}].content[{j}]"
            text = await _transcribe(gateway, caller, model, chunk, where, correlation_id, source)
            content.append({"type": "text", "text": text})
        heard.append(message.model_copy(update={"content": content}))
    return heard
