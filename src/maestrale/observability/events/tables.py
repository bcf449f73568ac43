"""What observability keeps beside the chat completion events that accounting writes
(`accounting.tables.ChatCompletionEvent`): the text index of their messages and the embeddings
of their conversations."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.db import Base


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
