"""Document libraries, their documents and their sharings.

A library lives in the workspace it was created in (its rows carry that workspace and its
organization) and belongs either to that workspace (`owner_type` Workspace, `owner_id` the
workspace) or to the user who created it (`owner_type` User, `owner_id` the user). Who else may
read or write it is what its sharings say (`LibrarySharing`: a user, a workspace or the whole
organization, as Viewer or Editor). A document's rows carry its library's workspace, whoever
uploaded it. The chunks and their indexes are `libraries.index`'s.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class Library(WorkspaceScoped, Base):
    """A library: its owner, its counters (kept by every upload and deletion, in the same
    transaction) and the chunk size its documents are cut with."""

    __tablename__ = "libraries"
    __table_args__ = (Index("ix_libraries_org_created", "organization_id", "created_at", "id"),)

    name: Mapped[str] = mapped_column(String(512))
    description: Mapped[str | None] = mapped_column(Text, default=None)
    chunk_size: Mapped[int | None] = mapped_column(Integer, default=None)
    owner_type: Mapped[str] = mapped_column(String(16))  # User | Workspace
    owner_id: Mapped[str] = mapped_column(String(36))
    creator_id: Mapped[str | None] = mapped_column(String(36), default=None)
    nb_documents: Mapped[int] = mapped_column(Integer, default=0)
    total_size: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class LibraryDocument(WorkspaceScoped, Base):
    """A document of a library: its blob, its processing state and what processing found.

    `generation` counts the processings asked for (upload, each reprocess): a processing job
    carries the generation it was enqueued for and writes its results only if it is still the
    document's, so a stale job never overwrites a newer one's. `text_key` is the blob of the
    extracted pages (a JSON list of page texts)."""

    __tablename__ = "library_documents"
    __table_args__ = (Index("ix_library_documents_library_created", "library_id", "created_at"),)

    library_id: Mapped[str] = mapped_column(ForeignKey("libraries.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(512))
    mime_type: Mapped[str | None] = mapped_column(String(255), default=None)
    extension: Mapped[str | None] = mapped_column(String(32), default=None)
    size: Mapped[int] = mapped_column(BigInteger)
    hash: Mapped[str | None] = mapped_column(String(64), default=None)
    blob_key: Mapped[str] = mapped_column(String(600))
    text_key: Mapped[str | None] = mapped_column(String(600), default=None)
    process_status: Mapped[str] = mapped_column(String(32), default="todo")
    processing_status: Mapped[str] = mapped_column(Text, default="Todo")
    generation: Mapped[int] = mapped_column(Integer, default=1)
    # The job of the current generation: a document whose job ended without a result (its
    # worker died on the last attempt) reads as failed, never as forever in progress.
    job_id: Mapped[str | None] = mapped_column(String(36), default=None)
    number_of_pages: Mapped[int | None] = mapped_column(Integer, default=None)
    tokens_processing_main_content: Mapped[int | None] = mapped_column(Integer, default=None)
    tokens_processing_total: Mapped[int] = mapped_column(Integer, default=0)
    summary: Mapped[str | None] = mapped_column(Text, default=None)
    attributes: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    uploaded_by_id: Mapped[str | None] = mapped_column(String(36), default=None)
    uploaded_by_type: Mapped[str] = mapped_column(String(16), default="User")
    last_processed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class LibrarySharing(WorkspaceScoped, Base):
    """Access to a library given to a user, a workspace or the organization (`share_with_type`
    User | Workspace | Org, `share_with_uuid` its id), at a role: Viewer or Editor."""

    __tablename__ = "library_sharings"
    __table_args__ = (
        UniqueConstraint(
            "library_id", "share_with_type", "share_with_uuid", name="uq_library_sharings_target"
        ),
        Index("ix_library_sharings_target", "share_with_uuid", "share_with_type"),
    )

    library_id: Mapped[str] = mapped_column(ForeignKey("libraries.id", ondelete="CASCADE"))
    share_with_type: Mapped[str] = mapped_column(String(16))
    share_with_uuid: Mapped[str] = mapped_column(String(36))
    role: Mapped[str] = mapped_column(String(16))
    shared_by: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
