"""Business rules of audio agents: creation, versioning (every update is a new version with the
whole configuration), reads by version, cursor-paged lists, deletion."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.audio_agents.configuration import check, described, stored
from maestrale.audio_agents.repository import AudioAgentRepository, AudioSessionRepository
from maestrale.audio_agents.schemas import (
    AudioAgentCreate,
    AudioAgentListPage,
    AudioAgentOut,
    AudioAgentSessionListPage,
    AudioAgentSessionSummary,
    AudioAgentUpdate,
)
from maestrale.audio_agents.tables import AudioAgent, AudioAgentVersion, AudioSession
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest, NotFound
from maestrale.core.ids import new_id
from maestrale.core.pagination import decode_cursor, encode_cursor
from maestrale.engines.registry import EngineRegistry

MAX_VERSION = 2**31
MAX_PAGE_SIZE = 100


class AudioAgentNotFound(NotFound):
    code = "audio_agent_not_found"


class AudioAgentVersionNotFound(NotFound):
    code = "audio_agent_version_not_found"


def new_audio_agent_id() -> str:
    return "aag_" + new_id().replace("-", "")


def page_size_of(page_size: int) -> int:
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise BadRequest(
            f"page_size must be between 1 and {MAX_PAGE_SIZE}",
            code="invalid_page_size",
            param="page_size",
        )
    return page_size


def time_cursor(page_token: str | None) -> tuple[datetime, str] | None:
    if not page_token:
        return None
    raw = decode_cursor(page_token)
    try:
        return datetime.fromisoformat(str(raw["c"])), str(raw["i"])
    except (KeyError, ValueError) as exc:
        raise BadRequest("invalid page_token", code="invalid_cursor", param="page_token") from exc


def version_cursor(page_token: str | None) -> int:
    if not page_token:
        return 0
    raw = decode_cursor(page_token).get("v")
    if not isinstance(raw, int) or not 0 <= raw < MAX_VERSION:
        raise BadRequest("invalid page_token", code="invalid_cursor", param="page_token")
    return raw


class AudioAgentService:
    def __init__(self, session: AsyncSession, tenant: Tenant, engines: EngineRegistry) -> None:
        self.session = session
        self.tenant = tenant
        self.engines = engines
        self.repo = AudioAgentRepository(session, tenant)

    def describe(self, agent: AudioAgent, row: AudioAgentVersion) -> AudioAgentOut:
        return AudioAgentOut(
            id=agent.id,
            owner_id=agent.owner_id,
            created_at=agent.created_at,
            updated_at=row.created_at,
            name=row.name,
            description=row.description,
            version=row.version,
            configuration=described(self.engines, dict(row.configuration or {})),
        )

    async def agent(self, agent_id: str) -> AudioAgent:
        row = await self.repo.get(agent_id)
        if row is None:
            raise AudioAgentNotFound(f"audio agent {agent_id!r} not found", param="agent_id")
        return row

    async def version_row(self, agent: AudioAgent, version: int | None) -> AudioAgentVersion:
        number = agent.current_version if version is None else version
        row = await self.repo.version(agent, number) if 0 < number < MAX_VERSION else None
        if row is None:
            raise AudioAgentVersionNotFound(
                f"audio agent {agent.id!r} has no version {number}", param="version"
            )
        return row

    async def get(self, agent_id: str, version: int | None = None) -> AudioAgentOut:
        agent = await self.agent(agent_id)
        return self.describe(agent, await self.version_row(agent, version))

    async def list_page(
        self, page_size: int, page_token: str | None, search: str | None
    ) -> AudioAgentListPage:
        size = page_size_of(page_size)
        rows = await self.repo.after(time_cursor(page_token), size + 1, search)
        more, rows = len(rows) > size, rows[:size]
        current = await self.repo.current_versions(rows)
        token = None
        if more:
            token = encode_cursor({"c": rows[-1].created_at.isoformat(), "i": rows[-1].id})
        data = [self.describe(row, current[row.id]) for row in rows if row.id in current]
        return AudioAgentListPage(data=data, next_page_token=token)

    async def versions(
        self, agent_id: str, page_size: int, page_token: str | None
    ) -> AudioAgentListPage:
        size = page_size_of(page_size)
        agent = await self.agent(agent_id)
        rows = await self.repo.versions_after(agent, version_cursor(page_token), size + 1)
        more, rows = len(rows) > size, rows[:size]
        token = encode_cursor({"v": rows[-1].version}) if more else None
        return AudioAgentListPage(
            data=[self.describe(agent, row) for row in rows], next_page_token=token
        )

    async def sessions(
        self, agent_id: str, page_size: int, page_token: str | None
    ) -> AudioAgentSessionListPage:
        size = page_size_of(page_size)
        agent = await self.agent(agent_id)
        repo = AudioSessionRepository(self.session, self.tenant)
        rows = await repo.of_agent(agent.id, time_cursor(page_token), size + 1)
        more, rows = len(rows) > size, rows[:size]
        token = None
        if more:
            token = encode_cursor({"c": rows[-1].created_at.isoformat(), "i": rows[-1].id})
        return AudioAgentSessionListPage(data=[summary(row) for row in rows], next_page_token=token)

    async def _append_version(self, agent: AudioAgent, body: AudioAgentCreate) -> AudioAgentVersion:
        config = stored(body.configuration)
        check(self.engines, config, "configuration.")
        now = utcnow()
        agent.last_version += 1
        row = AudioAgentVersion(
            version=agent.last_version,
            name=body.name,
            description=body.description,
            configuration=config,
            created_at=now,
        )
        await self.repo.add_version(agent, row)
        agent.current_version, agent.name, agent.updated_at = row.version, row.name, now
        await self.session.flush()
        return row

    async def create(self, body: AudioAgentCreate, owner_id: str) -> AudioAgentOut:
        check(self.engines, stored(body.configuration), "configuration.")
        now = utcnow()
        agent = AudioAgent(
            id=new_audio_agent_id(),
            name=body.name,
            owner_id=owner_id,
            created_at=now,
            updated_at=now,
        )
        await self.repo.add(agent)
        return self.describe(agent, await self._append_version(agent, body))

    async def update(self, agent_id: str, body: AudioAgentUpdate) -> AudioAgentOut:
        agent = await self.agent(agent_id)
        return self.describe(agent, await self._append_version(agent, body))

    async def delete(self, agent_id: str) -> None:
        await self.repo.delete_agent(await self.agent(agent_id))


def summary(row: AudioSession) -> AudioAgentSessionSummary:
    duration = None
    if row.started_at is not None and row.ended_at is not None:
        duration = max(0, round((row.ended_at - row.started_at).total_seconds()))
    return AudioAgentSessionSummary(
        id=row.id,
        agent_id=row.agent_id or "",
        started_at=row.started_at,
        duration=duration,
    )
