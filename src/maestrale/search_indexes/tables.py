"""Context search indexes: an index (its schema of fields, its embedding configuration and its
lifecycle), its documents (the caller's source id, the document's fields), and the summary
fields generated or written per language.

An index's chunks are the document libraries' chunks (`library_chunks`, with `library_id` the
index's id and `document_id` the internal id of a `SearchIndexDocument`): one store, one vector
index and one keyword index for both APIs. What a context chunk has beyond a library's (its
locator, chunk type, parent, metadata and custom chunk fields) is in the chunk's `attributes`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class SearchIndex(WorkspaceScoped, Base):
    """A managed search index of a workspace, by a name unique in it."""

    __tablename__ = "search_indexes"
    __table_args__ = (
        UniqueConstraint("workspace_id", "name", name="uq_search_indexes_ws_name"),
        Index("ix_search_indexes_ws_created", "workspace_id", "created_at", "id"),
    )

    name: Mapped[str] = mapped_column(String(128))
    creator_id: Mapped[str] = mapped_column(String(200))
    # provisioning | ready | failed | deleting (the SDK's ManagedIndexStatus).
    status: Mapped[str] = mapped_column(String(16))
    status_message: Mapped[str | None] = mapped_column(Text, default=None)
    # The ManagedIndexFields in force ({"document_fields": {...}, "chunk_fields": {...}}), and
    # the one an update is applying (None when none is).
    schema: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    pending_schema: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    # The ManagedIndexConfig as sent ({"embedding": {"type", "name", "dimensions", ...}}).
    config: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    # The catalog id of the embedding model ("mistral" embeddings), None for "custom" ones
    # (the caller sends every vector); and the vectors' dimension.
    embedding_model: Mapped[str | None] = mapped_column(String(200), default=None)
    dimension: Mapped[int] = mapped_column(Integer)
    document_count: Mapped[int] = mapped_column(Integer, default=0)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    modified_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SearchIndexDocument(WorkspaceScoped, Base):
    """A document of an index: the caller's `source_id` and its document fields. `id` (36
    characters) is what its chunks carry as their `document_id`."""

    __tablename__ = "search_index_documents"
    __table_args__ = (
        UniqueConstraint("index_id", "source_id", name="uq_search_index_documents_source"),
    )

    index_id: Mapped[str] = mapped_column(ForeignKey("search_indexes.id", ondelete="CASCADE"))
    source_id: Mapped[str] = mapped_column(String(512))
    fields: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    # The length in characters of the document's text (the end of its last chunk).
    length: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    modified_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SearchIndexSummary(Base):
    """The summary field of an index in one language: its content and how it came to be
    (`status`: handwritten | generated | generated_confirmed), and the state of its generation
    (`generation`: idle | running | failed, with `error`), which a durable job runs."""

    __tablename__ = "search_index_summaries"

    index_id: Mapped[str] = mapped_column(
        ForeignKey("search_indexes.id", ondelete="CASCADE"), primary_key=True
    )
    language: Mapped[str] = mapped_column(String(8), primary_key=True)
    content: Mapped[str] = mapped_column(Text, default="")
    # None until a summary exists (a first generation still running).
    status: Mapped[str | None] = mapped_column(String(24), default=None)
    translated: Mapped[bool] = mapped_column(Boolean, default=False)
    generation: Mapped[str] = mapped_column(String(16), default="idle")
    error: Mapped[str | None] = mapped_column(Text, default=None)
    job_id: Mapped[str | None] = mapped_column(String(64), default=None)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
