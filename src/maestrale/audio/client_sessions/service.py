"""Minting client sessions: a secret for one served realtime model, for a bounded time."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.audio.client_sessions.schemas import (
    ClientSecret,
    ClientSessionCreate,
    ClientSessionOut,
)
from maestrale.core.auth.client_sessions.authenticate import generate_secret
from maestrale.core.auth.client_sessions.repository import ClientSessionRepository
from maestrale.core.auth.keys import hash_key
from maestrale.core.auth.principal import Principal
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest, NotFound
from maestrale.engines.registry import EngineRegistry
from maestrale.gateway.capabilities import SPEECH, TRANSCRIPTION_REALTIME

DEFAULT_TTL = 600
MAX_TTL = 3600
# The capabilities whose models have a realtime WebSocket a client secret can open.
REALTIME_CAPABILITIES = (TRANSCRIPTION_REALTIME.catalog_name, SPEECH.catalog_name)


async def mint(
    session: AsyncSession,
    principal: Principal,
    engines: EngineRegistry,
    body: ClientSessionCreate,
) -> ClientSessionOut:
    """A new secret for `body.model`; 400 for a bad lifetime or a model with no realtime
    WebSocket, 404 for an unknown model. The secret is shown once: only its hash is kept."""
    ttl = DEFAULT_TTL if body.ttl_seconds is None else body.ttl_seconds
    if not 1 <= ttl <= MAX_TTL:
        raise BadRequest(
            f"ttl_seconds must be between 1 and {MAX_TTL}",
            code="invalid_ttl",
            param="ttl_seconds",
        )
    resolved = engines.resolve(body.model)
    if resolved is None:
        raise NotFound(f"model {body.model!r} not found", code="model_not_found", param="model")
    if not any(resolved.spec.has(name) for name in REALTIME_CAPABILITIES):
        raise BadRequest(
            f"model {body.model!r} has no realtime session (it serves neither realtime "
            "transcription nor speech)",
            code="model_not_realtime",
            param="model",
        )
    secret = generate_secret()
    expires_at = utcnow().replace(microsecond=0) + timedelta(seconds=ttl)
    await ClientSessionRepository(session).mint(principal, body.model, hash_key(secret), expires_at)
    return ClientSessionOut(
        expires_at=expires_at, client_secret=ClientSecret(value=secret, expires_at=expires_at)
    )
