"""Fine-tuning jobs, their events (each status change, oldest first) and their checkpoints.

A checkpoint's primary key is `(job_id, step_number)`: a worker resumed after a crash that
reports a step again writes nothing new.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class FineTuningJob(WorkspaceScoped, Base):
    __tablename__ = "fine_tuning_jobs"
    __table_args__ = (Index("ix_fine_tuning_jobs_ws_created", "workspace_id", "created_at"),)

    # The creator: its user, or for a key bound to no user, that key (`created_by_me`).
    created_by: Mapped[str | None] = mapped_column(String(36), default=None)
    key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    # The base model as the client named it, and the catalog id it resolved to.
    model: Mapped[str] = mapped_column(String(256))
    root: Mapped[str] = mapped_column(String(200))
    job_type: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(32))
    auto_start: Mapped[bool] = mapped_column(Boolean, default=True)
    # Defaults filled in: what the trainer uses.
    hyperparameters: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    # [{"file_id", "weight"}] and [file id].
    training_files: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    validation_files: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    suffix: Mapped[str | None] = mapped_column(String(32), default=None)
    integrations: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    # ClassifierTargetOut dicts (loss_function filled in); [] for completion jobs.
    classifier_targets: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    invalid_sample_skip_percentage: Mapped[float] = mapped_column(Float, default=0.0)
    fine_tuned_model: Mapped[str | None] = mapped_column(String(300), default=None)
    trained_tokens: Mapped[int | None] = mapped_column(BigInteger, default=None)
    # JobMetadataOut fields (token counts, steps, duration and cost estimates).
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSONDoc, default=dict)
    # The core `jobs` row that trains it.
    queue_job_id: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    modified_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class FineTuningEvent(Base):
    """One event of a job (`status-updated` with the new status, and what the worker reports)."""

    __tablename__ = "fine_tuning_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(
        ForeignKey("fine_tuning_jobs.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(100))
    data: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class FineTuningCheckpoint(Base):
    __tablename__ = "fine_tuning_checkpoints"

    job_id: Mapped[str] = mapped_column(
        ForeignKey("fine_tuning_jobs.id", ondelete="CASCADE"), primary_key=True
    )
    step_number: Mapped[int] = mapped_column(Integer, primary_key=True)
    train_loss: Mapped[float | None] = mapped_column(Float, default=None)
    valid_loss: Mapped[float | None] = mapped_column(Float, default=None)
    valid_mean_token_accuracy: Mapped[float | None] = mapped_column(Float, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
