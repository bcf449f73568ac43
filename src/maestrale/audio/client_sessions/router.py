"""POST /v1/client/sessions (`client.realtime.sessions.create`)."""

from __future__ import annotations

from maestrale.audio.client_sessions.schemas import ClientSessionCreate, ClientSessionOut
from maestrale.audio.client_sessions.service import mint
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.errors import error_responses
from maestrale.core.routing import Work, domain_router
from maestrale.engines.dependencies import Engines

router = domain_router(prefix="/client/sessions", tags=["realtime"])


@router.post(
    "",
    response_model=ClientSessionOut,
    status_code=201,
    responses=error_responses((400, 404, 422)),
)
async def create_client_session(
    body: ClientSessionCreate, work: Work, principal: StandardAuth, engines: Engines
) -> ClientSessionOut:
    """Mint a short-lived client secret (`rt_...`, 10 minutes by default, `ttl_seconds` up to
    an hour) that opens the realtime WebSockets of `model` (transcription
    `/v1/audio/transcriptions/realtime`, speech `/v1/audio/speech/realtime`) in place of the API
    key, as `Authorization: Bearer rt_...` or, from a browser, as the subprotocols
    `["realtime", "rt_..."]`. It acts as the key that minted it and is refused once expired,
    for another model, or once that key is revoked."""
    return await mint(work.session, principal, engines, body)
