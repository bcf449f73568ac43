"""WebSocket /v1/audio/transcriptions/realtime?model=... (`client.audio.realtime`)."""

from __future__ import annotations

import contextlib
import uuid

from fastapi import APIRouter, WebSocket

from maestrale.audio.realtime.messages import error_body
from maestrale.audio.realtime.session import RealtimeSession
from maestrale.config import Settings
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import authenticate_standard
from maestrale.core.errors import AppError, BadRequest
from maestrale.core.websocket import deny
from maestrale.gateway.capabilities import TRANSCRIPTION_REALTIME
from maestrale.gateway.dependencies import sane_correlation_id
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller

router = APIRouter(tags=["audio"])


@router.websocket("/audio/transcriptions/realtime")
async def realtime_transcription(websocket: WebSocket) -> None:
    """Transcribe PCM audio as it is sent (the SDK's `client.audio.realtime`). Authenticated as
    the HTTP routes (`Authorization: Bearer`; a refused key gets HTTP 401 on the upgrade), the
    model in the `model` query parameter. The server sends `session.created`; the client sends
    `input_audio.append` (base64 PCM, default `pcm_s16le` at 16 kHz; `session.update` changes
    the format before the audio starts), `input_audio.flush` (the text of everything sent so
    far) and `input_audio.end`; the server streams `transcription.language`,
    `transcription.text.delta` and `transcription.segment` as the text becomes final, then
    `transcription.done` with the usage, and closes. Failures are `error` events."""
    services = app_services(websocket)
    gateway: Gateway = services.gateway
    settings: Settings = services.settings
    try:
        principal = await authenticate_standard(websocket)
    except AppError as exc:
        await deny(websocket, exc)
        return
    assert principal.workspace_id is not None
    caller = Caller(
        principal.organization_id,
        principal.workspace_id,
        principal.key_id,
        principal.user_id,
        principal.service_account_id,
    )
    request_id = uuid.uuid4().hex
    correlation = sane_correlation_id(websocket.headers.get("x-correlation-id")) or request_id
    await websocket.accept()
    model = websocket.query_params.get("model", "")
    try:
        if not model:
            raise BadRequest("the `model` query parameter is required", param="model")
        call = await gateway.open(caller, model, TRANSCRIPTION_REALTIME, correlation_id=correlation)
        await gateway.admit(call, 0)
    except AppError as exc:
        with contextlib.suppress(Exception):  # unless the client is gone already
            await websocket.send_json(error_body(exc))
            await websocket.close(1011 if exc.status_code >= 500 else 1008)
        return
    session = RealtimeSession(websocket, gateway, call, request_id, settings.audio_max_seconds)
    await session.run()
