"""SQL of the console's sessions (rows looked up by the hash of the cookie's token)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, update
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.console.tables import ConsoleSession


class ConsoleSessionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, row: ConsoleSession) -> None:
        self.session.add(row)
        await self.session.flush()

    async def get(self, session_id: str) -> ConsoleSession | None:
        return await self.session.get(ConsoleSession, session_id)

    async def delete(self, session_id: str) -> None:
        await self.session.execute(delete(ConsoleSession).where(ConsoleSession.id == session_id))

    async def delete_expired(self, now: datetime) -> None:
        await self.session.execute(delete(ConsoleSession).where(ConsoleSession.expires_at <= now))

    async def touch(self, session_id: str, now: datetime) -> None:
        await self.session.execute(
            update(ConsoleSession).where(ConsoleSession.id == session_id).values(last_seen_at=now)
        )
