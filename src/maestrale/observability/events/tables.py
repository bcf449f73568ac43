"""Chat completion events (every chat completion that passes through Maestrale, by construction)
and the embeddings of their conversations."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, LargeBinary, String, Text
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


class ChatCompletionEventText(Base):
    """The text of an event's request and response messages, the target of the message text
    search fields. The database writes it, never the application: triggers on
    chat_completion_events keep it in sync (migration 0011), whoever inserts events. Message
    texts are the string contents and the text chunks of the messages, one line apart ('' for
    no text). The full-text indexes live outside this model: an FTS5 trigram table on SQLite,
    pg_trgm GIN indexes on Postgres (TEXT_INDEX_OBJECTS)."""

    __tablename__ = "chat_completion_event_texts"

    # The rowid of the FTS5 index on SQLite (stable: an INTEGER PRIMARY KEY survives VACUUM).
    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    event_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("chat_completion_events.id", ondelete="CASCADE"), unique=True
    )
    request_text: Mapped[str] = mapped_column(Text, default="")
    response_text: Mapped[str] = mapped_column(Text, default="")


# Database objects of the message text index that no model declares (migration 0011).
TEXT_FTS = "chat_completion_event_texts_fts"
TEXT_INDEX_OBJECTS = frozenset(
    {
        TEXT_FTS,
        *(f"{TEXT_FTS}_{shadow}" for shadow in ("data", "idx", "docsize", "config", "content")),
        "ix_cce_texts_request_trgm",
        "ix_cce_texts_response_trgm",
    }
)


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
