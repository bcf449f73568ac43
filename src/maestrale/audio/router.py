"""POST /v1/audio/transcriptions: plain (JSON) and streamed (server-sent events)."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response
from starlette.requests import ClientDisconnect

from maestrale.audio.form import read_body
from maestrale.audio.schemas import TranscriptionResponse
from maestrale.audio.service import TranscriptionService, response_body
from maestrale.audio.streaming import stream_transcription
from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.core.dependencies import Blobs
from maestrale.core.errors import MODEL_ERRORS, BadRequest, error_responses
from maestrale.core.routing import Work, domain_router
from maestrale.core.sse import streamed
from maestrale.files.service import FileService
from maestrale.gateway.dependencies import CallerDep, CorrelationId, GatewayDep
from maestrale.gateway.responses import json_response

# The form is parsed by the route itself: its 422 and 415 are declared here.
router = domain_router(tags=["audio"], responses=error_responses((*MODEL_ERRORS, 415, 422)))

_FIELDS: dict[str, Any] = {
    "model": {"type": "string", "examples": ["voxtral-mini-latest"]},
    "file": {"type": "string", "format": "binary"},
    "file_url": {"type": "string", "nullable": True},
    "file_id": {"type": "string", "nullable": True},
    "language": {"type": "string", "nullable": True},
    "temperature": {"type": "number", "nullable": True},
    "stream": {"type": "boolean", "default": False},
    "diarize": {"type": "boolean", "default": False},
    "context_bias": {"type": "array", "items": {"type": "string"}},
    "timestamp_granularities": {
        "type": "array",
        "items": {"type": "string", "enum": ["segment", "word"]},
    },
}
_BODY = {"type": "object", "required": ["model"], "properties": _FIELDS}
_OPENAPI = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {"schema": _BODY},
            "application/x-www-form-urlencoded": {"schema": _BODY},
        },
    }
}


@router.post(
    "/audio/transcriptions",
    response_model=None,
    openapi_extra=_OPENAPI,
    responses={
        200: streamed(
            TranscriptionResponse,
            "JSON, or with `stream` true server-sent events (transcription.language, "
            "transcription.text.delta, transcription.segment, transcription.done)",
        )
    },
)
async def create_transcription(
    request: Request,
    work: Work,
    principal: StandardAuth,
    caller: CallerDep,
    gateway: GatewayDep,
    correlation: CorrelationId,
    settings: AppSettings,
    blobs: Blobs,
) -> Response:
    """Transcribe speech. The audio is a multipart `file` part, a `file_url` (fetched by the
    server; loopback and private addresses are refused unless configured) or the `file_id` of an
    uploaded file. Optional: `language`, `temperature`, `timestamp_granularities` (segment
    timestamps are always given; "word" adds word timestamps), `context_bias`, `diarize`
    (accepted; local models do not label speakers, `speaker_id` is null) and `stream`.

    400 for audio that cannot be decoded, 413 for audio over the size or duration limit."""
    length = request.headers.get("content-length")
    try:
        form, upload = await read_body(
            request.headers.get("content-type"),
            int(length) if length and length.isascii() and length.isdigit() else None,
            request.stream(),
            settings.audio_max_bytes,
        )
    except ClientDisconnect as exc:
        raise BadRequest("the client went away during the upload", code="client_gone") from exc
    files = FileService(work.session, Tenant.of(principal), principal.key_id, blobs)
    service = TranscriptionService(gateway, settings, files)
    call, engine_request = await service.prepare(caller, form, upload, correlation_id=correlation)
    granularities = list(form.timestamp_granularities)
    if form.stream:
        return await stream_transcription(request, gateway, call, engine_request, granularities)
    result = await service.complete(call, engine_request)
    return json_response(request, call, response_body(form.model, result, granularities))
