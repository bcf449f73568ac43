"""RAG deployments, their indexes, and ingestion pipeline configurations.

A deployment is a search deployment that runs outside this server (Vespa): what is kept is its
registration (where it answers queries, its indexes and their schemas) and the metrics it
reports, never a connection to it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class RagDeployment(WorkspaceScoped, Base):
    """A registered deployment, by a name unique in its workspace (registering the name again
    replaces the definition and keeps the id)."""

    __tablename__ = "rag_deployments"
    __table_args__ = (
        UniqueConstraint("workspace_id", "name", name="uq_rag_deployments_ws_name"),
        Index("ix_rag_deployments_ws_created", "workspace_id", "created_at", "id"),
    )

    name: Mapped[str] = mapped_column(String(128))
    type: Mapped[str] = mapped_column(String(16))  # "vespa", the SDK's one kind
    vespa_version: Mapped[str] = mapped_column(String(64))
    # Recorded only: the server never calls it.
    query_url: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))  # online | offline
    creator_id: Mapped[str] = mapped_column(String(200))
    # The last reported count (0 until a report, or after one that cleared the metrics).
    document_count: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    modified_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RagDeploymentIndex(Base):
    """An index of a deployment, reached only through it. Its id is kept while a registration
    of the deployment keeps its name."""

    __tablename__ = "rag_deployment_indexes"
    __table_args__ = (
        UniqueConstraint("deployment_id", "name", name="uq_rag_deployment_indexes_name"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    deployment_id: Mapped[str] = mapped_column(ForeignKey("rag_deployments.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(128))
    position: Mapped[int] = mapped_column(Integer)  # its place in the registration
    fields: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc)
    sd: Mapped[str] = mapped_column(Text)  # the Vespa schema definition, as sent
    embedding_dimensions: Mapped[int | None] = mapped_column(Integer, default=None)
    # None until a metrics report names the index (and after one that cleared the metrics).
    document_count: Mapped[int | None] = mapped_column(BigInteger, default=None)


class RagIngestionPipeline(WorkspaceScoped, Base):
    """An ingestion pipeline configuration, by a name unique in its workspace, and the
    statistics of the runs reported for it."""

    __tablename__ = "rag_ingestion_pipelines"
    __table_args__ = (
        UniqueConstraint("workspace_id", "name", name="uq_rag_ingestion_pipelines_ws_name"),
        Index("ix_rag_ingestion_pipelines_ws_created", "workspace_id", "created_at", "id"),
    )

    name: Mapped[str] = mapped_column(String(128))
    # Who registered the definition in force (a user's id, else the key's).
    author_id: Mapped[str] = mapped_column(String(200))
    pipeline_composition: Mapped[dict[str, str] | None] = mapped_column(JSONDoc, default=None)
    # [{"name", "type"}] as sent, or None.
    target_indexes: Mapped[list[dict[str, str]] | None] = mapped_column(JSONDoc, default=None)
    last_run_time: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    last_run_chunks_count: Mapped[int] = mapped_column(BigInteger, default=0)
    total_chunks_count: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    modified_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
