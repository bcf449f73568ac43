"""WebSocket /v1/audio/transcriptions/realtime?model=... (`client.audio.realtime`)."""

from __future__ import annotations

from fastapi import APIRouter, WebSocket

from maestrale.audio.realtime.opening import open_realtime
from maestrale.audio.realtime.session import RealtimeSession
from maestrale.config import Settings
from maestrale.core.app_services import app_services
from maestrale.gateway.capabilities import TRANSCRIPTION_REALTIME

router = APIRouter(tags=["audio"])


@router.websocket("/audio/transcriptions/realtime")
async def realtime_transcription(websocket: WebSocket) -> None:
    """Transcribe PCM audio as it is sent (the SDK's `client.audio.realtime`). Authenticated as
    the HTTP routes (`Authorization: Bearer`; a refused key gets HTTP 401 on the upgrade) or by
    a client secret of the model (`POST /v1/client/sessions`), the model in the `model` query
    parameter. The server sends `session.created`; the client sends
    `input_audio.append` (base64 PCM, default `pcm_s16le` at 16 kHz; `session.update` changes
    the format before the audio starts), `input_audio.flush` (the text of everything sent so
    far) and `input_audio.end`; the server streams `transcription.language`,
    `transcription.text.delta` and `transcription.segment` as the text becomes final, then
    `transcription.done` with the usage, and closes. Failures are `error` events."""
    opened = await open_realtime(websocket, TRANSCRIPTION_REALTIME)
    if opened is None:
        return
    services = app_services(websocket)
    settings: Settings = services.settings
    session = RealtimeSession(
        websocket, services.gateway, opened.call, opened.request_id, settings.audio_max_seconds
    )
    await session.run()
