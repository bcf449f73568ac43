"""WebSocket /v1/audio/sessions/{session_id}/realtime: the voice session (the `server_url` that
`POST /v1/audio/sessions` answers)."""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import APIRouter, WebSocket

from maestrale.audio_agents.realtime.context import SessionContext, VoiceServices
from maestrale.audio_agents.realtime.live import live_sessions
from maestrale.audio_agents.realtime.session import VoiceSession
from maestrale.audio_agents.repository import AudioSessionRepository, session_by_token_id
from maestrale.audio_agents.sessions import token_matches
from maestrale.core.app_services import app_services
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import AppError, Conflict, NotFound, Unauthorized
from maestrale.core.websocket import deny
from maestrale.gateway.hooks import Caller

router = APIRouter(tags=["audio"])


def _token(websocket: WebSocket) -> str | None:
    header = websocket.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return websocket.query_params.get("token") or None


async def _join(
    services: VoiceServices, session_id: str, token: str | None, stop: asyncio.Event
) -> SessionContext:
    """The session the token opens, checked (401, 404, 409 when ended or its join window
    closed), and marked joined."""
    if token is None:
        raise Unauthorized(
            "send the session's participant_token as `Authorization: Bearer <token>` or `?token=`",
            code="missing_participant_token",
        )
    async with services.db.transaction() as work:
        row = await session_by_token_id(work.session, session_id[:200])
        if row is None:
            raise NotFound(
                f"audio session {session_id!r} not found", code="audio_session_not_found"
            )
        if not token_matches(row, token):
            raise Unauthorized("invalid participant token", code="invalid_participant_token")
        tenant = Tenant(row.organization_id, row.workspace_id, row.caller.get("user_id"))
        if row.status == "ended":
            raise Conflict(f"audio session {session_id!r} has ended", code="session_ended")
        if not await AudioSessionRepository(work.session, tenant).start(row.id, utcnow()):
            raise Conflict(
                f"audio session {session_id!r} was not joined before it expired",
                code="session_expired",
            )
        caller = Caller(
            row.organization_id,
            row.workspace_id,
            row.caller.get("key_id"),
            row.caller.get("user_id"),
            row.caller.get("service_account_id"),
        )
        return SessionContext(
            row.id, tenant, caller, dict(row.configuration), row.conversation_id, services, stop
        )


@router.websocket("/audio/sessions/{session_id}/realtime")
async def voice_session(websocket: WebSocket, session_id: str) -> None:
    """A voice session: the user's speech is transcribed, answered by the session's chat model
    in its conversation (every turn stored as conversation entries) and the answer spoken back.
    Opened with the session's `participant_token` (`Authorization: Bearer` or `?token=`), once
    at a time (a second socket is refused with 409), before the session's `expires_at`.

    Client → server, JSON text frames: `input_audio.append` {audio: base64 mono PCM s16le at
    16 kHz}; `input_audio.flush` (the user's turn ends now; otherwise it ends after a silence of
    `stt.turn_detection.min_silence_ms`, 600 ms by default); `input_audio.end` (no more audio:
    the session ends once answered); `input_text` {text} (a typed turn); `tool_call.result`
    {id, result, status} (the client's answer to a function call); `session.close`. Server →
    client: `session.created`,
    `agent.state.changed` {old_state, state: listening | thinking | speaking},
    `transcription.segment` {id, role: user | assistant, content, final}, `output_audio.delta`
    {id, audio: base64 PCM s16le, sample_rate}, `output_audio.done`, `output_audio.interrupted`
    (the user spoke over the answer: it stops, and what was spoken of it is what is stored),
    `tool_call.started` {id, name, arguments} (a function tool for the client to run) and
    `tool_call.ended` {id, name, status, result},
    `error` {source, code, message, fatal} (a bad message is ignored, the session goes on), and
    `session.ended` {reason} before the server closes. The session ends with its socket."""
    services: VoiceServices = app_services(websocket)
    live = live_sessions(websocket)
    stop = live.claim(session_id)
    if stop is None:
        await deny(
            websocket, Conflict("the session's WebSocket is already open", code="session_busy")
        )
        return
    try:
        try:
            ctx = await _join(services, session_id, _token(websocket), stop)
        except AppError as exc:
            await deny(websocket, exc)
            return
        await websocket.accept()
        await VoiceSession(websocket, ctx).run()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(websocket.close(1000), 5)  # a client not reading
        async with services.db.transaction() as work:
            await AudioSessionRepository(work.session, ctx.tenant).update(
                ctx.session_id, status="ended", ended_at=utcnow()
            )
    finally:
        live.release(session_id, stop)
