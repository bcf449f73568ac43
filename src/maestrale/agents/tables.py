"""Agents, their immutable versions and their version aliases.

An agent row holds what lists filter and sort on (a copy of its current version's name, model,
metadata and deployment flag); every update appends a version row and moves `current_version`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class Agent(WorkspaceScoped, Base):
    __tablename__ = "agents"
    __table_args__ = (Index("ix_agents_ws_created", "workspace_id", "created_at", "id"),)

    current_version: Mapped[int] = mapped_column(Integer, default=0)
    last_version: Mapped[int] = mapped_column(Integer, default=0)
    name: Mapped[str] = mapped_column(String(512))
    model: Mapped[str] = mapped_column(String(256))
    meta: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONDoc, default=None)
    deployment_chat: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AgentVersion(Base):
    """One immutable version of an agent's configuration."""

    __tablename__ = "agent_versions"

    agent_id: Mapped[str] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    model: Mapped[str] = mapped_column(String(256))
    name: Mapped[str] = mapped_column(String(512))
    instructions: Mapped[str | None] = mapped_column(Text, default=None)
    tools: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    completion_args: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    # The prompt and skills it runs with (`registries.references.stored_refs`; None: none).
    registry_refs: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    guardrails: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONDoc, default=None)
    description: Mapped[str | None] = mapped_column(Text, default=None)
    handoffs: Mapped[list[str] | None] = mapped_column(JSONDoc, default=None)
    meta: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONDoc, default=None)
    deployment_chat: Mapped[bool] = mapped_column(Boolean, default=False)
    version_message: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AgentAlias(Base):
    """A name pointing at one version of an agent; unique per agent, movable."""

    __tablename__ = "agent_aliases"

    agent_id: Mapped[str] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    alias: Mapped[str] = mapped_column(String(256), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
