"""WebSocket /v1/audio/speech/realtime?model=... (`client.audio.realtime_speech`)."""

from __future__ import annotations

from fastapi import APIRouter, WebSocket

from maestrale.audio.realtime.opening import open_realtime
from maestrale.audio.speech.realtime.session import RealtimeSpeechSession, SessionContext
from maestrale.audio.speech.service import default_model
from maestrale.core.app_services import app_services
from maestrale.core.auth.principal import Tenant
from maestrale.gateway.capabilities import SPEECH
from maestrale.voices.service import WorkspaceVoices

router = APIRouter(tags=["audio"])


@router.websocket("/audio/speech/realtime")
async def realtime_speech(websocket: WebSocket) -> None:
    """Speak text as it is written (the SDK's `client.audio.realtime_speech`). Authenticated as
    the HTTP routes (`Authorization: Bearer`; a refused key gets HTTP 401 on the upgrade), the
    model in the `model` query parameter (default: the first speech model). The server sends
    `session.created`; the client may send `session.update` (voice, ref_audio,
    response_format — pcm, raw 32-bit float little-endian mono at 24 kHz by default — before
    the text starts), then `input_text.append` (text pieces), `input_text.flush` (speak what
    was sent, finished sentence or not) and `input_text.end`; the server sends
    `speech.audio.delta` per sentence as soon as it is complete and synthesized, then
    `speech.audio.done` with the usage, and closes. Failures are `error` events."""
    opened = await open_realtime(websocket, SPEECH, lambda gateway: default_model(gateway.registry))
    if opened is None:
        return
    services = app_services(websocket)
    voices = WorkspaceVoices(services.db, services.blobs, Tenant.of(opened.principal))
    context = SessionContext(services.gateway, opened.call, services.settings, voices)
    await RealtimeSpeechSession(websocket, context, opened.request_id).run()
