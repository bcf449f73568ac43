"""One row per model call: what the admin usage, rate and spend limits are computed from."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, UTCDateTime
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
