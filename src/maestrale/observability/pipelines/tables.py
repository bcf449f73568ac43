"""Pipelines and their configs: which judges run over which spans, and how far each got."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class Pipeline(WorkspaceScoped, Base):
    """Judges run over the spans matching `selectors` (any of them), as they arrive. The
    pipeline's job evaluates spans whose row id is past `last_span_row_id` (its watermark) in
    batches, moving the watermark with each batch's verdicts. Deleting it deletes the row (the
    SDK's pipelines are hard-deleted); its span evaluations stay."""

    __tablename__ = "observability_pipelines"
    __table_args__ = (
        UniqueConstraint("workspace_id", "slug", name="uq_obs_pipelines_slug"),
        Index("ix_obs_pipelines_ws_created", "workspace_id", "created_at", "id"),
    )

    name: Mapped[str] = mapped_column(String(500))
    slug: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text, default=None)
    # [{"source_kind": "span", "filter": "<search expression>" | None}]
    selectors: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    creator_id: Mapped[str | None] = mapped_column(String(200), default=None)
    # Who the judge calls are accounted to (the last creator or editor).
    key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    user_id: Mapped[str | None] = mapped_column(String(36), default=None)
    last_span_row_id: Mapped[int] = mapped_column(BigInteger, default=0)
    # The queued or running job of the pipeline, if any (one chain of runs at a time).
    job_id: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PipelineConfig(WorkspaceScoped, Base):
    """One judge of a pipeline (the SDK's PipelineConfig of kind judge-v1): the judge's
    definition when it was added (later edits of the judge do not change the pipeline), its
    sampling and mapping."""

    __tablename__ = "observability_pipeline_configs"
    __table_args__ = (
        UniqueConstraint("workspace_id", "slug", name="uq_obs_pipeline_configs_slug"),
        Index("ix_obs_pipeline_configs_pipeline", "pipeline_id", "position"),
    )

    pipeline_id: Mapped[str] = mapped_column(
        ForeignKey("observability_pipelines.id", ondelete="CASCADE")
    )
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(500))
    slug: Mapped[str] = mapped_column(String(200))
    judge_id: Mapped[str] = mapped_column(String(200))
    # The reference's slug as the client gave it (the SDK's scorer_slug).
    judge_slug: Mapped[str] = mapped_column(String(500))
    judge_definition: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    mapping: Mapped[dict[str, str]] = mapped_column(JSONDoc, default=dict)
    sampling: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, nullable=True, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
