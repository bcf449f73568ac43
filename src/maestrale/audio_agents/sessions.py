"""Business rules of audio sessions: creation (from an agent's version or an inline
configuration, checked and resolved once: the session runs what it was created with), the
participant token that opens its WebSocket (only its hash is stored), reads with the transcripts
of its conversation, and closing."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.audio_agents.configuration import check, runnable, stored
from maestrale.audio_agents.repository import AudioSessionRepository
from maestrale.audio_agents.schemas import AudioSessionCreate, AudioSessionCreated, AudioSessionOut
from maestrale.audio_agents.service import AudioAgentService
from maestrale.audio_agents.tables import AudioSession
from maestrale.conversations.repository import ConversationRepository
from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import NotFound
from maestrale.core.ids import new_id
from maestrale.engines.registry import EngineRegistry

# How long a created session may wait for its WebSocket.
JOIN_WINDOW = timedelta(minutes=15)
SETUP_FIELDS = ("llm", "tts", "stt", "turn", "instructions", "tools", "welcome_message")


class AudioSessionNotFound(NotFound):
    code = "audio_session_not_found"


def owner_of(principal: Principal) -> str:
    """The id an agent or session is owned by: the key's user, service account, or the key."""
    return principal.user_id or principal.service_account_id or principal.key_id


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(row: AudioSession, token: str) -> bool:
    return hmac.compare_digest(row.token_hash, token_hash(token))


def realtime_path(session_id: str) -> str:
    return f"/v1/audio/sessions/{session_id}/realtime"


class AudioSessionService:
    def __init__(self, session: AsyncSession, tenant: Tenant, engines: EngineRegistry) -> None:
        self.session = session
        self.tenant = tenant
        self.engines = engines
        self.repo = AudioSessionRepository(session, tenant)

    async def row(self, session_id: str) -> AudioSession:
        row = await self.repo.get(session_id)
        if row is None:
            raise AudioSessionNotFound(
                f"audio session {session_id!r} not found", param="session_id"
            )
        return row

    async def create(
        self, body: AudioSessionCreate, principal: Principal, base_url: str
    ) -> AudioSessionCreated:
        """A session of the agent's version (`agent_version`, else its current one), the
        request's own setup fields replacing the agent's; `base_url` is this server's WebSocket
        root (ws[s]://host)."""
        config: dict[str, Any] = {}
        agent_id, version = None, None
        if body.agent_id is not None:
            agents = AudioAgentService(self.session, self.tenant, self.engines)
            agent = await agents.agent(body.agent_id)
            row = await agents.version_row(agent, body.agent_version)
            config = dict(row.configuration or {})
            agent_id, version = agent.id, row.version
        own = stored(body)
        config.update({key: own[key] for key in SETUP_FIELDS if key in own})
        check(self.engines, config, "")
        resolved = runnable(self.engines, config)
        token = secrets.token_urlsafe(32)
        now = utcnow()
        session = AudioSession(
            id="aus_" + new_id().replace("-", ""),
            agent_id=agent_id,
            agent_version=version,
            configuration=resolved,
            owner_id=owner_of(principal),
            caller={
                "key_id": principal.key_id,
                "user_id": principal.user_id,
                "service_account_id": principal.service_account_id,
            },
            token_hash=token_hash(token),
            status="active",
            created_at=now,
            expires_at=now + JOIN_WINDOW,
        )
        await self.repo.add(session)
        return AudioSessionCreated(
            id=session.id,
            participant_token=token,
            server_url=base_url + realtime_path(session.id),
            created_at=now,
            expires_at=session.expires_at,
            function_tools=[
                tool
                for tool in session.configuration.get("tools") or []
                if tool.get("type") == "function"
            ],
        )

    async def get(self, session_id: str, live: bool) -> AudioSessionOut:
        row = await self.row(session_id)
        transcripts: list[dict[str, Any]] = []
        if row.conversation_id is not None:
            conversations = ConversationRepository(self.session, self.tenant)
            conversation = await conversations.get(row.conversation_id)
            if conversation is not None:
                entries = await conversations.entries(conversation)
                transcripts = [t for t in map(transcript_turn, entries) if t is not None]
        return AudioSessionOut(
            id=row.id,
            status="ended" if row.status == "ended" else "active",
            num_participants=1 if live else 0,
            created_at=row.created_at,
            transcripts=transcripts,
        )

    async def close(self, session_id: str) -> AudioSession:
        row = await self.row(session_id)
        if row.status != "ended":
            row.status, row.ended_at = "ended", utcnow()
            await self.session.flush()
        return row


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(chunk.get("text", "")) for chunk in content if isinstance(chunk, dict))
    return ""


def transcript_turn(item: dict[str, Any]) -> dict[str, Any] | None:
    """An AudioSessionResponse transcript turn of a conversation entry (None for the others)."""
    timestamp = item.get("created_at") or datetime.min.isoformat()
    kind = item.get("type")
    if kind == "message.input" and item.get("role", "user") == "user":
        return {
            "role": "user",
            "timestamp": timestamp,
            "latency": {},
            "content": _text(item.get("content")),
        }
    if kind == "message.output":
        return {
            "role": "assistant",
            "timestamp": timestamp,
            "latency": {},
            "content": _text(item.get("content")),
        }
    if kind == "tool.execution":
        info = item.get("info") or {}
        return {
            "role": "tool",
            "tool_call_id": str(info.get("tool_call_id") or item.get("id")),
            "name": str(item.get("name", "")),
            "status": "error" if info.get("error") is not None else "success",
            "timestamp": timestamp,
            "result": info.get("output", info.get("error")),
        }
    return None
