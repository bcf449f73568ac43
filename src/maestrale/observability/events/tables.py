"""Chat completion events (every chat completion that passes through Maestrale, by construction)
and the embeddings of their conversations."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.ids import new_id


class ChatCompletionEvent(Base):
    """One chat completion that passed through Maestrale, as the accounting recorder wrote it."""

    __tablename__ = "chat_completion_events"
    __table_args__ = (
        Index("ix_cce_ws_created", "workspace_id", "created_at", "id"),
        Index("ix_cce_ws_correlation", "workspace_id", "correlation_id"),
        # Model / status filters newest first: seek, then walk created_at (migration 0009).
        Index("ix_cce_ws_model_created", "workspace_id", "model", "created_at", "id"),
        Index("ix_cce_ws_status_created", "workspace_id", "status_code", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    organization_id: Mapped[str] = mapped_column(String(36))
    workspace_id: Mapped[str] = mapped_column(String(36))
    key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    correlation_id: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(50), default="api")
    model: Mapped[str] = mapped_column(String(200))
    status_code: Mapped[int] = mapped_column(Integer, default=200)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    request_messages: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    response_messages: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    enabled_tools: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    nb_input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    nb_output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    nb_messages: Mapped[int] = mapped_column(Integer, default=0)
    extra_fields: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    def conversation(self) -> list[dict[str, Any]]:
        """The request's messages followed by the response's: what judges and imports read."""
        return [*(self.request_messages or []), *(self.response_messages or [])]


class EventEmbedding(Base):
    """The embedding of an event's conversation (float32 bytes), computed lazily by the first
    similar-events request that needs it."""

    __tablename__ = "observability_event_embeddings"
    __table_args__ = (
        # The similar-events scan: a workspace's vectors of one model, in event_id chunks.
        Index("ix_obs_event_embeddings_scan", "workspace_id", "model", "event_id"),
    )

    event_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(String(36), index=True)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
