"""Span evaluations: one judge's verdict on one span, written by an evaluation pipeline."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Float, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.db import Base, JSONDoc
from maestrale.telemetry.tables import RowId


class SpanEvaluation(Base):
    """The SDK's GetSpanEvaluation, with the span's name and duration (what pipeline results
    show) and the pipeline config that wrote it. A judge call that failed is kept with its
    `error` (so the span is not judged again) and is left out of every search."""

    __tablename__ = "observability_span_evaluations"
    __table_args__ = (
        # A resumed pipeline run never stores a verdict twice.
        UniqueConstraint("pipeline_config_id", "span_row_id", name="uq_obs_span_evaluations_once"),
        Index("ix_obs_span_evaluations_ws_time", "workspace_id", "timestamp_ns", "id"),
        Index("ix_obs_span_evaluations_ws_span", "workspace_id", "trace_id", "span_id"),
    )

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    workspace_id: Mapped[str] = mapped_column(String(36))
    user_id: Mapped[str] = mapped_column(String(200), default="")
    service_account_id: Mapped[str] = mapped_column(String(200), default="")
    trace_id: Mapped[str] = mapped_column(String(32))
    span_id: Mapped[str] = mapped_column(String(16))
    span_row_id: Mapped[int] = mapped_column(BigInteger)
    span_name: Mapped[str] = mapped_column(String(1024), default="")
    span_duration_ns: Mapped[int] = mapped_column(BigInteger, default=0)
    response_id: Mapped[str] = mapped_column(String(256), default="")
    conversation_id: Mapped[str] = mapped_column(String(256), default="")
    # When the verdict was given, in nanoseconds since the epoch.
    timestamp_ns: Mapped[int] = mapped_column(BigInteger)
    evaluation_name: Mapped[str] = mapped_column(String(500))
    score_value: Mapped[float] = mapped_column(Float, default=0.0)
    score_label: Mapped[str] = mapped_column(String(500), default="")
    explanation: Mapped[str] = mapped_column(Text, default="")
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSONDoc, default=dict)
    error: Mapped[str | None] = mapped_column(Text, nullable=True, default=None)
    pipeline_id: Mapped[str] = mapped_column(String(200))
    pipeline_config_id: Mapped[str] = mapped_column(String(200))
    pipeline_config_slug: Mapped[str] = mapped_column(String(200))
