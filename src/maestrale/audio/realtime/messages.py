"""The messages of a realtime transcription session (the SDK's `RealtimeTranscription*`
models): what the client sends, parsed and checked, and the session as the server describes it.

Client → server (JSON text frames): `input_audio.append` {audio: base64 PCM, at most 262,144
bytes decoded}, `input_audio.flush`, `input_audio.end`, `session.update` {session:
{audio_format?: {encoding, sample_rate}, target_streaming_delay_ms?}}.
Server → client: `session.created` / `session.updated` {session}, the transcription events
(`transcription.language`, `.text.delta`, `.segment`, `.done`) and `error` {error: {message,
code}}, where `code` is the HTTP status the same failure has on the HTTP routes and
`error_code` the machine code of their error bodies.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from maestrale.core.errors import AppError, BadRequest, PayloadTooLarge
from maestrale.engines.transcription_types import (
    MAX_SAMPLE_RATE,
    MIN_SAMPLE_RATE,
    PCM_ENCODINGS,
    PcmFormat,
)

# The SDK documents this bound for one `input_audio.append` (decoded bytes).
MAX_APPEND_BYTES = 262_144
_MAX_APPEND_BASE64 = (MAX_APPEND_BYTES + 2) // 3 * 4


class AudioFormatIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    encoding: str
    sample_rate: int = Field(ge=MIN_SAMPLE_RATE, le=MAX_SAMPLE_RATE)

    @field_validator("encoding")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in PCM_ENCODINGS:
            raise ValueError(f"encoding must be one of {', '.join(PCM_ENCODINGS)}")
        return value


class SessionUpdateIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    audio_format: AudioFormatIn | None = None
    target_streaming_delay_ms: int | None = Field(default=None, ge=0, le=60_000)
    # mistralai 3.x's session options the streaming engine has no means to honour: refused when
    # set (a clear error beats a transcript that silently ignored them), accepted when null/empty.
    diarize: bool | None = None
    context_bias: list[str] | None = None
    language: str | None = None
    speaker_references: dict[str, str] | None = None
    turn_detection: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _supported(self) -> SessionUpdateIn:
        unsupported = [name for name in UNSUPPORTED_OPTIONS if getattr(self, name)]
        if unsupported:
            raise ValueError(
                f"the realtime engine does not support {', '.join(unsupported)}: leave "
                "them unset (batch transcription takes `language` and `diarize`)"
            )
        return self


UNSUPPORTED_OPTIONS = (
    "diarize",
    "context_bias",
    "language",
    "speaker_references",
    "turn_detection",
)


@dataclass(frozen=True, slots=True)
class Append:
    audio: bytes


@dataclass(frozen=True, slots=True)
class FlushAudio:
    pass


@dataclass(frozen=True, slots=True)
class EndAudio:
    pass


@dataclass(frozen=True, slots=True)
class UpdateSession:
    update: SessionUpdateIn


ClientMessage = Append | FlushAudio | EndAudio | UpdateSession


def _invalid(message: str, code: str = "invalid_message") -> BadRequest:
    return BadRequest(message, code=code)


def _audio(value: Any) -> bytes:
    if not isinstance(value, str):
        raise _invalid("input_audio.append needs `audio`, a base64 string", "invalid_audio")
    if len(value) > _MAX_APPEND_BASE64:
        raise PayloadTooLarge(
            f"one input_audio.append carries at most {MAX_APPEND_BYTES} bytes of audio",
            code="audio_chunk_too_large",
        )
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _invalid(f"`audio` is not valid base64: {exc}", "invalid_audio") from exc


def parse(frame: str | bytes) -> ClientMessage:
    """One client message; AppError (400, 413, 422) for what is not one."""
    try:
        document = orjson.loads(frame)
    except orjson.JSONDecodeError as exc:
        raise _invalid(f"the message is not JSON: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("type"), str):
        raise _invalid("a message is a JSON object with a `type`")
    kind = document["type"]
    if kind == "input_audio.append":
        return Append(_audio(document.get("audio")))
    if kind == "input_audio.flush":
        return FlushAudio()
    if kind == "input_audio.end":
        return EndAudio()
    if kind == "session.update":
        try:
            return UpdateSession(SessionUpdateIn.model_validate(document.get("session")))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'session'}: {e['msg']}" for e in exc.errors()
            )
            raise AppError(
                f"invalid session.update: {problems}", code="invalid_session", status_code=422
            ) from exc
    raise _invalid(
        f"unknown message type {kind[:100]!r} (input_audio.append, input_audio.flush, "
        "input_audio.end, session.update)",
        "unknown_message_type",
    )


def session_body(
    request_id: str, model: str, audio_format: PcmFormat, delay_ms: int | None
) -> dict[str, Any]:
    """RealtimeTranscriptionSession."""
    return {
        "request_id": request_id,
        "model": model,
        "audio_format": {
            "encoding": audio_format.encoding,
            "sample_rate": audio_format.sample_rate,
        },
        "target_streaming_delay_ms": delay_ms,
    }


def error_body(error: AppError) -> dict[str, Any]:
    """RealtimeTranscriptionError."""
    return {
        "type": "error",
        "error": {
            "message": error.message,
            "code": error.status_code,
            "error_code": error.code,
        },
    }
