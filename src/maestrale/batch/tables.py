"""Batch jobs and their per-line results.

A line's result row is its progress marker: written once (primary key `(batch_id, line)`), in
the transaction that also advances the job's counters, so a line replayed after a crash can
never be counted or written twice. The output and error files are assembled from these rows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class BatchStatus:
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    TIMEOUT_EXCEEDED = "TIMEOUT_EXCEEDED"
    CANCELLATION_REQUESTED = "CANCELLATION_REQUESTED"
    CANCELLED = "CANCELLED"

    FINAL = frozenset({SUCCESS, FAILED, TIMEOUT_EXCEEDED, CANCELLED})
    ALL = frozenset({QUEUED, RUNNING, CANCELLATION_REQUESTED}) | FINAL


class BatchJob(WorkspaceScoped, Base):
    __tablename__ = "batch_jobs"
    __table_args__ = (Index("ix_batch_jobs_ws_created", "workspace_id", "created_at"),)

    user_id: Mapped[str | None] = mapped_column(String(36), default=None)
    key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    endpoint: Mapped[str] = mapped_column(String(100))
    model: Mapped[str | None] = mapped_column(String(256), default=None)
    agent_id: Mapped[str | None] = mapped_column(String(200), default=None)
    input_files: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    # Inline requests of the create call, kept as a JSONL blob read like an input file.
    requests_blob: Mapped[str | None] = mapped_column(String(600), default=None)
    meta: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONDoc, default=None)
    timeout_hours: Mapped[int] = mapped_column(Integer, default=24)
    status: Mapped[str] = mapped_column(String(32), default=BatchStatus.QUEUED)
    total_requests: Mapped[int] = mapped_column(Integer, default=0)
    completed_requests: Mapped[int] = mapped_column(Integer, default=0)
    succeeded_requests: Mapped[int] = mapped_column(Integer, default=0)
    failed_requests: Mapped[int] = mapped_column(Integer, default=0)
    output_file: Mapped[str | None] = mapped_column(String(36), default=None)
    error_file: Mapped[str | None] = mapped_column(String(36), default=None)
    # Why the job as a whole failed, if it did; and the most frequent reasons lines failed.
    errors: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    failure_summary: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    job_id: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class BatchResult(Base):
    """One input line's outcome: `record` is its output (or error) file line, as JSON text."""

    __tablename__ = "batch_results"

    batch_id: Mapped[str] = mapped_column(
        ForeignKey("batch_jobs.id", ondelete="CASCADE"), primary_key=True
    )
    line: Mapped[int] = mapped_column(Integer, primary_key=True)
    ok: Mapped[bool] = mapped_column(Boolean)
    status_code: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    record: Mapped[str] = mapped_column(Text)
