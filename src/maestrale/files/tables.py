"""Uploaded and generated files: workspace rows pointing at a blob."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class StoredFile(WorkspaceScoped, Base):
    """A file of a workspace. `user_id` / `key_id` name the uploader: a file of visibility
    `user` is seen only by keys of that user (or, for a key bound to no user, by that key)."""

    __tablename__ = "files"
    __table_args__ = (Index("ix_files_ws_created", "workspace_id", "created_at"),)

    user_id: Mapped[str | None] = mapped_column(String(36), default=None)
    key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    visibility: Mapped[str] = mapped_column(String(16), default="workspace")
    filename: Mapped[str] = mapped_column(String(512))
    purpose: Mapped[str] = mapped_column(String(64))
    sample_type: Mapped[str] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(String(32), default="upload")
    size: Mapped[int] = mapped_column("bytes", BigInteger)
    num_lines: Mapped[int | None] = mapped_column(Integer, default=None)
    mimetype: Mapped[str | None] = mapped_column(String(255), default=None)
    signature: Mapped[str | None] = mapped_column(String(128), default=None)
    blob_key: Mapped[str] = mapped_column(String(600))
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
