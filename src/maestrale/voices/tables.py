"""Custom voices: workspace rows pointing at their normalized sample in blob storage."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class CustomVoice(WorkspaceScoped, Base):
    """A voice a workspace created from a sample (`type` "custom" on the wire). The sample is
    stored once, normalized (WAV, mono, 16-bit, `voices.sample.SAMPLE_RATE`), under `blob_key`."""

    __tablename__ = "voices"
    __table_args__ = (Index("ix_voices_ws_created", "workspace_id", "created_at", "id"),)

    user_id: Mapped[str | None] = mapped_column(String(36), default=None)
    name: Mapped[str] = mapped_column(String(256))
    slug: Mapped[str | None] = mapped_column(String(256), default=None)
    languages: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    gender: Mapped[str | None] = mapped_column(String(16), default=None)
    age: Mapped[int | None] = mapped_column(Integer, default=None)
    tags: Mapped[list[str] | None] = mapped_column(JSONDoc, default=None)
    color: Mapped[str | None] = mapped_column(String(64), default=None)
    description: Mapped[str | None] = mapped_column(Text, default=None)
    retention_notice: Mapped[int] = mapped_column(Integer, default=30)
    kind: Mapped[str] = mapped_column(String(16), default="ivc")
    sample_filename: Mapped[str | None] = mapped_column(String(512), default=None)
    sample_seconds: Mapped[float] = mapped_column(Float)
    trimmed_seconds: Mapped[float | None] = mapped_column(Float, default=None)
    blob_key: Mapped[str] = mapped_column(String(600))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
