"""POST /v1/audio/speech: the platform's `audio.speech.complete` (JSON or server-sent events)
and OpenAI's `audio.speech.create` (raw audio bytes), one route."""

from __future__ import annotations

from fastapi import Request, Response

from maestrale.audio.speech.formats import encoder
from maestrale.audio.speech.schemas import SpeechBody, SpeechResponse
from maestrale.audio.speech.service import SpeechService, SpeechTally
from maestrale.audio.speech.streaming import encoded, json_answer, raw_answer, sse_answer
from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.core.dependencies import ReleasingBlobs
from maestrale.core.errors import MODEL_ERRORS, error_responses
from maestrale.core.routing import Work, domain_router
from maestrale.core.sse import streamed
from maestrale.gateway.dependencies import CallerDep, CorrelationId, GatewayDep
from maestrale.voices.service import VoiceService

router = domain_router(tags=["audio"], responses=error_responses((*MODEL_ERRORS, 413)))

_RAW_TYPES = ("application/octet-stream", "audio/")
_OTHER_TYPES = ("application/json", "text/event-stream")


def wants_raw(accept: str | None, body: SpeechBody) -> bool:
    """Raw audio for OpenAI's clients: an `Accept` of audio or octet-stream (and not JSON), or
    OpenAI's body (`voice` rather than `voice_id`) with no `Accept` asking for JSON."""
    accept = (accept or "").lower()
    if any(kind in accept for kind in _OTHER_TYPES):
        return False
    if any(kind in accept for kind in _RAW_TYPES):
        return True
    return body.voice is not None and body.voice_id is None


@router.post(
    "/audio/speech",
    response_model=None,
    responses={
        200: {
            **streamed(
                SpeechResponse,
                "JSON `{audio_data}`, with `stream` true server-sent events "
                "(speech.audio.delta, speech.audio.done), or for OpenAI's clients the raw audio",
            ),
        }
    },
)
async def create_speech(
    body: SpeechBody,
    request: Request,
    work: Work,
    principal: StandardAuth,
    caller: CallerDep,
    gateway: GatewayDep,
    correlation: CorrelationId,
    settings: AppSettings,
    blobs: ReleasingBlobs,
) -> Response:
    """Speak `input` with `model` (default: the first speech model of the catalog) in
    `voice_id`: one of the model's preset voices (`GET /v1/audio/voices`), a custom voice of
    the workspace, or none for the model's default; or in the voice of `ref_audio`, a base64
    sample, for this call only (custom voices and `ref_audio` need a model that clones).

    `response_format`: mp3 (default), wav, flac, opus (Ogg), pcm (raw mono 32-bit float
    little-endian at 24 kHz; 16-bit for OpenAI's clients), aac. The audio is sent as JSON
    `{"audio_data": base64}`, or with `stream` true as server-sent events, one
    `speech.audio.delta` per sentence as soon as it is synthesized, then `speech.audio.done`
    with the usage (characters as prompt tokens). OpenAI's `audio.speech.create` (Accept
    `application/octet-stream`, or its `voice` field) gets the raw bytes, streamed as they are
    encoded; its `speed` is honoured; `stream_format: "sse"` gets its audio events.

    `expressiveness` is accepted and has no effect (the engines have one delivery);
    `instructions`, `phoneme_hints` and `conversation_history` are refused (400): no engine
    here honours them. 400 for empty text or text over the limit (`speech_max_characters`), an
    unknown voice, or a sample that is not audio; 413 for a sample over the size limit."""
    voices = VoiceService(work.session, Tenant.of(principal), blobs)
    service = SpeechService(gateway, settings, voices)
    prepared = await service.prepare(caller, body, correlation_id=correlation)
    tally = SpeechTally(len(body.input))
    first, rest = await service.start(prepared, tally)
    format_name = body.response_format or "mp3"
    openai_sse = not body.stream and body.stream_format == "sse"
    raw = not body.stream and not openai_sse and wants_raw(request.headers.get("accept"), body)
    pieces = encoded(first, rest, encoder(format_name, openai=raw or openai_sse))
    call = prepared.call
    if body.stream or openai_sse:
        return sse_answer(request, call, pieces, tally, openai=openai_sse)
    if raw:
        return raw_answer(request, call, pieces, format_name)
    return await json_answer(request, call, pieces)
