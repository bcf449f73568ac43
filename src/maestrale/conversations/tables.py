"""Conversations and their entries.

An entry is stored as its wire shape (`body`), numbered by `seq` within its conversation; the
conversation's `entry_count` is the next number. An append holds the conversation's turn (a
lease: `turn_owner` until `turn_expires_at`, renewed while its model runs) instead of a lock, so
that no transaction is open during the model call; its entries are written only while its lease
holds and `entry_count` has not moved.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class Conversation(WorkspaceScoped, Base):
    __tablename__ = "conversations"
    __table_args__ = (Index("ix_conversations_ws_created", "workspace_id", "created_at", "id"),)

    agent_id: Mapped[str | None] = mapped_column(String(200), default=None)
    agent_version: Mapped[int | None] = mapped_column(Integer, default=None)
    model: Mapped[str | None] = mapped_column(String(256), default=None)
    instructions: Mapped[str | None] = mapped_column(Text, default=None)
    tools: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    completion_args: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    # The prompt and skills it was started with (`registries.references.stored_refs`), resolved
    # again at each run; for an agent conversation only its prompt's variables. None: none.
    registry_refs: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    guardrails: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONDoc, default=None)
    name: Mapped[str | None] = mapped_column(Text, default=None)
    description: Mapped[str | None] = mapped_column(Text, default=None)
    meta: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONDoc, default=None)
    entry_count: Mapped[int] = mapped_column(Integer, default=0)
    turn_owner: Mapped[str | None] = mapped_column(String(64), default=None)
    turn_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ConversationEntry(Base):
    __tablename__ = "conversation_entries"
    __table_args__ = (UniqueConstraint("conversation_id", "seq"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    seq: Mapped[int] = mapped_column(Integer)
    type: Mapped[str] = mapped_column(String(32))
    body: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
