"""SQL of client sessions: minted for a key, looked up by the hash of their secret."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.client_sessions.tables import ClientSession
from maestrale.core.auth.principal import Principal
from maestrale.core.auth.tables import ApiKey
from maestrale.core.clock import utcnow


@dataclass(frozen=True, slots=True)
class LiveSecret:
    """What a presented secret grants: the minting key (by its hash, for the key cache, which
    refuses a revoked key) and the one model it opens."""

    key_hash: str
    model: str
    expires_at: datetime


class ClientSessionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def mint(
        self, principal: Principal, model: str, secret_hash: str, expires_at: datetime
    ) -> ClientSession:
        assert principal.workspace_id is not None
        # Expired sessions of the workspace are of no use to anyone: each mint drops them, so
        # the table holds only the live ones (an index on workspace_id keeps this cheap).
        await self.session.execute(
            delete(ClientSession).where(
                ClientSession.workspace_id == principal.workspace_id,
                ClientSession.expires_at <= utcnow(),
            )
        )
        row = ClientSession(
            organization_id=principal.organization_id,
            workspace_id=principal.workspace_id,
            api_key_id=principal.key_id,
            purpose="realtime",
            model=model,
            secret_hash=secret_hash,
            expires_at=expires_at,
        )
        self.session.add(row)
        await self.session.flush()
        return row

    async def live(self, secret_hash: str) -> LiveSecret | None:
        """The unexpired session of a secret's hash, with its key's hash; None otherwise."""
        stmt = (
            select(ApiKey.key_hash, ClientSession.model, ClientSession.expires_at)
            .join(ApiKey, ApiKey.id == ClientSession.api_key_id)
            .where(ClientSession.secret_hash == secret_hash, ClientSession.expires_at > utcnow())
        )
        row = (await self.session.execute(stmt)).one_or_none()
        return None if row is None else LiveSecret(row[0], row[1], row[2])
