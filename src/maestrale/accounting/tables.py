"""What accounting writes for every model call: a usage row (what the admin usage, rate and spend
limits are computed from) and, for every chat completion that passes through Maestrale, its
event (which observability searches, judges and exports, and never writes)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.ids import new_id


class UsageRecord(Base):
    __tablename__ = "usage_records"
    __table_args__ = (
        Index("ix_usage_records_org_created", "organization_id", "created_at"),
        Index("ix_usage_records_ws_created", "workspace_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    organization_id: Mapped[str] = mapped_column(String(36))
    workspace_id: Mapped[str] = mapped_column(String(36))
    key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    user_id: Mapped[str | None] = mapped_column(String(36), default=None)
    service_account_id: Mapped[str | None] = mapped_column(String(36), default=None)
    model: Mapped[str] = mapped_column(String(200))
    endpoint: Mapped[str] = mapped_column(String(50))  # chat | fim | embeddings | ...
    source: Mapped[str] = mapped_column(String(50), default="api")  # api | batch | agent | ...
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    total_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    # Units of the non-token endpoints: transcription bills audio seconds, OCR pages.
    audio_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    pages: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    status_code: Mapped[int] = mapped_column(Integer, default=200)
    correlation_id: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


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
    service_account_id: Mapped[str | None] = mapped_column(String(36), default=None)
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
