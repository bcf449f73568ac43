"""The messages of a realtime speech session (the SDK's `RealtimeSpeech*` models).

Client → server (JSON text frames): `input_text.append` {text}, `input_text.flush` {text?},
`input_text.end`, `session.update` {session: {voice?, ref_audio?, response_format?,
streaming_mode?, expressiveness?}}.
Server → client: `session.created` / `session.updated` {session}, `speech.audio.delta`
{audio_data: base64}, `speech.audio.done` {usage} and `error` {error: {message, code}}, where
`code` is the HTTP status the same failure has on POST /v1/audio/speech and `error_code` the
machine code of its error body.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from maestrale.audio.speech.formats import FormatName
from maestrale.core.errors import AppError, BadRequest, PayloadTooLarge

StreamingMode = Literal["responsive", "long_form"]


class SessionUpdateIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    voice: str | None = Field(default=None, max_length=256)
    ref_audio: str | None = None
    response_format: FormatName | None = None
    # Accepted: each sentence is spoken as soon as it is complete, in both modes.
    streaming_mode: StreamingMode | None = None
    # Accepted with no effect, as on POST /v1/audio/speech: the engines have one delivery.
    expressiveness: float | None = Field(default=None, ge=1.0, allow_inf_nan=False)


@dataclass(frozen=True, slots=True)
class AppendText:
    text: str


@dataclass(frozen=True, slots=True)
class FlushText:
    text: str


@dataclass(frozen=True, slots=True)
class EndText:
    pass


@dataclass(frozen=True, slots=True)
class UpdateSession:
    update: SessionUpdateIn


ClientMessage = AppendText | FlushText | EndText | UpdateSession


def _invalid(message: str, code: str = "invalid_message") -> BadRequest:
    return BadRequest(message, code=code)


def _text(document: dict[str, Any], kind: str, required: bool, max_characters: int) -> str:
    value = document.get("text")
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise _invalid(f"{kind} needs `text`, a string", "invalid_text")
    if len(value) > max_characters:
        raise PayloadTooLarge(
            f"one {kind} carries at most {max_characters} characters", code="text_too_long"
        )
    return value


def parse(frame: str | bytes, max_characters: int) -> ClientMessage:
    """One client message; AppError (400, 413, 422) for what is not one."""
    try:
        document = orjson.loads(frame)
    except orjson.JSONDecodeError as exc:
        raise _invalid(f"the message is not JSON: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("type"), str):
        raise _invalid("a message is a JSON object with a `type`")
    kind = document["type"]
    if kind == "input_text.append":
        return AppendText(_text(document, kind, True, max_characters))
    if kind == "input_text.flush":
        return FlushText(_text(document, kind, False, max_characters))
    if kind == "input_text.end":
        return EndText()
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
        f"unknown message type {kind[:100]!r} (input_text.append, input_text.flush, "
        "input_text.end, session.update)",
        "unknown_message_type",
    )


@dataclass(slots=True)
class SessionState:
    """RealtimeSpeechSession, as the server reports it."""

    request_id: str
    model: str
    response_format: FormatName = "pcm"
    streaming_mode: StreamingMode = "responsive"
    expressiveness: float = 1.0
    voice: str | None = None
    is_ref_audio: bool = False

    def body(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "model": self.model,
            "is_ref_audio": self.is_ref_audio,
            "streaming_mode": self.streaming_mode,
            "response_format": self.response_format,
            "expressiveness": self.expressiveness,
            "voice": self.voice,
        }
