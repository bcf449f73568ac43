"""SQL of audio agents, their versions and audio sessions. Versions are reached only through an
agent read from the caller's workspace; sessions are workspace rows: all tenant-scoped by
construction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.audio_agents.tables import AudioAgent, AudioAgentVersion, AudioSession
from maestrale.core.pagination import keyset_after
from maestrale.core.repository import WorkspaceRepository


class AudioAgentRepository(WorkspaceRepository[AudioAgent]):
    model = AudioAgent

    async def after(
        self, cursor: tuple[datetime, str] | None, limit: int, search: str | None = None
    ) -> list[AudioAgent]:
        """The workspace's agents, newest first, after `cursor` (created_at, id)."""
        stmt = self.select()
        if search:  # a substring: `%`, `_` and the escape character match themselves
            stmt = stmt.where(
                sa.func.lower(AudioAgent.name).contains(search.lower(), autoescape=True)
            )
        if cursor is not None:
            stmt = stmt.where(
                keyset_after([AudioAgent.created_at, AudioAgent.id], list(cursor), descending=True)
            )
        ordered = stmt.order_by(AudioAgent.created_at.desc(), AudioAgent.id.desc())
        return await self.list(ordered.limit(limit))

    async def version(self, agent: AudioAgent, version: int) -> AudioAgentVersion | None:
        return await self.session.get(AudioAgentVersion, (agent.id, version))

    async def current_versions(self, agents: list[AudioAgent]) -> dict[str, AudioAgentVersion]:
        if not agents:
            return {}
        rows = await self.session.execute(
            sa.select(AudioAgentVersion).where(
                sa.tuple_(AudioAgentVersion.agent_id, AudioAgentVersion.version).in_(
                    [(a.id, a.current_version) for a in agents]
                )
            )
        )
        return {row.agent_id: row for row in rows.scalars()}

    async def versions_after(
        self, agent: AudioAgent, after: int, limit: int
    ) -> list[AudioAgentVersion]:
        """The agent's versions numbered above `after`, oldest first."""
        rows = await self.session.execute(
            sa.select(AudioAgentVersion)
            .where(AudioAgentVersion.agent_id == agent.id, AudioAgentVersion.version > after)
            .order_by(AudioAgentVersion.version)
            .limit(limit)
        )
        return list(rows.scalars())

    async def add_version(self, agent: AudioAgent, row: AudioAgentVersion) -> None:
        row.agent_id = agent.id
        self.session.add(row)
        await self.session.flush()

    async def delete_agent(self, agent: AudioAgent) -> None:
        """The agent with its versions (explicitly: SQLite may run without foreign-key
        cascades). Its sessions stay, with their transcripts."""
        await self.session.execute(
            sa.delete(AudioAgentVersion).where(AudioAgentVersion.agent_id == agent.id)
        )
        await self.delete(agent)


class AudioSessionRepository(WorkspaceRepository[AudioSession]):
    model = AudioSession

    async def of_agent(
        self, agent_id: str, cursor: tuple[datetime, str] | None, limit: int
    ) -> list[AudioSession]:
        """The sessions of an agent, newest first, after `cursor` (created_at, id)."""
        stmt = self.select().where(AudioSession.agent_id == agent_id)
        if cursor is not None:
            stmt = stmt.where(
                keyset_after(
                    [AudioSession.created_at, AudioSession.id], list(cursor), descending=True
                )
            )
        ordered = stmt.order_by(AudioSession.created_at.desc(), AudioSession.id.desc())
        return await self.list(ordered.limit(limit))

    async def update(self, session_id: str, **values: Any) -> bool:
        """Set columns of one of the workspace's sessions; False when it is not there."""
        result = await self.session.execute(
            sa.update(AudioSession)
            .where(
                AudioSession.workspace_id == self.tenant.workspace_id,
                AudioSession.id == session_id,
            )
            .values(**values)
        )
        return bool(getattr(result, "rowcount", 0))

    async def start(self, session_id: str, now: datetime) -> bool:
        """Mark the session joined (its first join's time kept), if it is still active and was
        joined before or its join window is still open; False otherwise."""
        result = await self.session.execute(
            sa.update(AudioSession)
            .where(
                AudioSession.workspace_id == self.tenant.workspace_id,
                AudioSession.id == session_id,
                AudioSession.status == "active",
                sa.or_(AudioSession.started_at.is_not(None), AudioSession.expires_at > now),
            )
            .values(started_at=sa.func.coalesce(AudioSession.started_at, now))
        )
        return bool(getattr(result, "rowcount", 0))


async def session_by_token_id(session: AsyncSession, session_id: str) -> AudioSession | None:
    """A session by id in any workspace: only for its WebSocket, whose participant token (checked
    against the row's hash by the caller) is the credential that names the workspace."""
    row: AudioSession | None = await session.get(AudioSession, session_id)
    return row
