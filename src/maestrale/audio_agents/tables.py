"""Audio agents, their immutable versions, and audio sessions.

An agent row holds what lists show (its current version's name); every update appends a version
row and moves `current_version`. A session keeps the configuration it runs (resolved, defaults
filled, so that a later version of its agent does not change it), the hash of its participant
token, and the conversation its turns are stored in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class AudioAgent(WorkspaceScoped, Base):
    __tablename__ = "audio_agents"
    __table_args__ = (Index("ix_audio_agents_ws_created", "workspace_id", "created_at", "id"),)

    current_version: Mapped[int] = mapped_column(Integer, default=0)
    last_version: Mapped[int] = mapped_column(Integer, default=0)
    name: Mapped[str] = mapped_column(String(512))
    owner_id: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AudioAgentVersion(Base):
    """One immutable version of an audio agent: its name, description and configuration (as
    given; defaults are filled when it is described or run)."""

    __tablename__ = "audio_agent_versions"

    agent_id: Mapped[str] = mapped_column(
        ForeignKey("audio_agents.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(512))
    description: Mapped[str | None] = mapped_column(Text, default=None)
    configuration: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AudioSession(WorkspaceScoped, Base):
    __tablename__ = "audio_sessions"
    __table_args__ = (
        Index("ix_audio_sessions_ws_agent_created", "workspace_id", "agent_id", "created_at"),
    )

    # The agent (and version) it runs, or None for an inline configuration; not a foreign key:
    # a session and its transcripts outlive the agent's deletion.
    agent_id: Mapped[str | None] = mapped_column(String(200), default=None)
    agent_version: Mapped[int | None] = mapped_column(Integer, default=None)
    configuration: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    owner_id: Mapped[str] = mapped_column(String(200))
    # Who created it (key_id, user_id, service_account_id): its model calls are theirs.
    caller: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    # sha256 hex of the participant token that opens its WebSocket.
    token_hash: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="active")  # active | ended
    conversation_id: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The WebSocket must be opened before this (the join window).
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
