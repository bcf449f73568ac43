"""The messages of the voice session WebSocket.

Client → server (JSON text frames):
- `input_audio.append` {audio: base64 mono PCM s16le at 16 kHz, at most 262,144 bytes decoded}
- `input_audio.flush`: the user's turn ends now (instead of waiting for its silence)
- `input_audio.end`: no more audio: the session ends once the current answer is spoken
- `input_text` {text}: a user turn typed rather than spoken (at most 4,096 characters)
- `tool_call.result` {id, result, status: done | error}: the answer of the client to a
  `tool_call.started` of one of the session's function tools
- `session.close`: the session ends now
Server → client: `session.created` {session}, `agent.state.changed` {old_state, state, ts}
(initializing, listening, thinking, speaking), `transcription.segment` {id, role: user |
assistant, content (cumulative), final, ts}, `output_audio.delta` {id, audio: base64 PCM s16le,
sample_rate}, `output_audio.done` {id}, `output_audio.interrupted` {id}, `tool_call.started`
{id, name, arguments, ts} (a function tool the client runs), `tool_call.ended` {id, name,
arguments, status: done | error | cancelled, result, ts}, `session.ended` {reason}, and `error`
{source, code, message, fatal} (the SDK's VoiceAgent* events).
"""

from __future__ import annotations

import base64
import binascii
import time
from dataclasses import dataclass
from typing import Any

import orjson

from maestrale.core.errors import AppError, BadRequest, PayloadTooLarge

MAX_APPEND_BYTES = 262_144
_MAX_APPEND_BASE64 = (MAX_APPEND_BYTES + 2) // 3 * 4
CONTROL = frozenset({"input_audio.flush", "input_audio.end", "session.close"})
MAX_TEXT = 4096
MAX_RESULT = 65_536


@dataclass(frozen=True, slots=True)
class ClientMessage:
    type: str
    audio: bytes = b""
    text: str = ""  # input_text's text, tool_call.result's result
    id: str = ""  # tool_call.result's call
    status: str = "done"


def _string(body: dict[str, Any], key: str, limit: int) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise BadRequest(f"{body['type']} needs `{key}` (a string)", code="invalid_message")
    if len(value) > limit:
        raise PayloadTooLarge(f"`{key}` is at most {limit} characters", code="message_too_large")
    return value


def parse(frame: str | bytes) -> ClientMessage:
    """A client message; BadRequest (or 413) for anything else."""
    try:
        body = orjson.loads(frame)
    except orjson.JSONDecodeError as exc:
        raise BadRequest("a message must be a JSON object", code="invalid_message") from exc
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        raise BadRequest("a message must be a JSON object with a `type`", code="invalid_message")
    kind = body["type"]
    if kind in CONTROL:
        return ClientMessage(kind)
    if kind == "input_text":
        return ClientMessage(kind, text=_string(body, "text", MAX_TEXT))
    if kind == "tool_call.result":
        status = body.get("status", "done")
        if status not in ("done", "error"):
            raise BadRequest("`status` is done or error", code="invalid_message")
        result = _string(body, "result", MAX_RESULT)
        return ClientMessage(kind, text=result, id=_string(body, "id", 256), status=status)
    if kind != "input_audio.append":
        raise BadRequest(f"unknown message type {kind[:64]!r}", code="unknown_message")
    audio = body.get("audio")
    if not isinstance(audio, str):
        raise BadRequest("input_audio.append needs `audio` (base64)", code="invalid_message")
    if len(audio) > _MAX_APPEND_BASE64:
        raise PayloadTooLarge(
            f"an audio chunk is at most {MAX_APPEND_BYTES} bytes", code="audio_chunk_too_large"
        )
    try:
        pcm = base64.b64decode(audio, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest("`audio` is not valid base64", code="invalid_audio") from exc
    if len(pcm) % 2:
        raise BadRequest("PCM s16le audio has an even number of bytes", code="invalid_audio")
    return ClientMessage(kind, pcm)


def now() -> float:
    return time.time()


def error_event(error: AppError, source: str, fatal: bool = False) -> dict[str, Any]:
    return {
        "type": "error",
        "source": source,
        "code": error.code,
        "message": error.message,
        "fatal": fatal,
        "payload": {"status": error.status_code},
    }


def state_event(old: str, new: str) -> dict[str, Any]:
    return {"type": "agent.state.changed", "old_state": old, "state": new, "ts": now()}


def transcript_event(id_: str, role: str, content: str, final: bool) -> dict[str, Any]:
    return {
        "type": "transcription.segment",
        "id": id_,
        "role": role,
        "content": content,
        "final": final,
        "ts": now(),
    }


def audio_event(id_: str, pcm: bytes, sample_rate: int) -> dict[str, Any]:
    return {
        "type": "output_audio.delta",
        "id": id_,
        "audio": base64.b64encode(pcm).decode(),
        "sample_rate": sample_rate,
    }
