"""Datasets, their records (conversations) and the tasks that import records into them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class Dataset(WorkspaceScoped, Base):
    """A named collection of conversations; deleting it only sets `deleted_at`."""

    __tablename__ = "observability_datasets"
    __table_args__ = (
        Index("ix_obs_datasets_ws_created", "workspace_id", "created_at", "id"),
        UniqueConstraint("workspace_id", "slug", name="uq_observability_datasets_ws_slug"),
    )

    name: Mapped[str] = mapped_column(String(500))
    # Unique in the workspace, deleted datasets included; kept when the dataset is renamed.
    slug: Mapped[str] = mapped_column(String(120))
    description: Mapped[str] = mapped_column(Text, default="")
    owner_id: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class DatasetRecord(WorkspaceScoped, Base):
    """One conversation of a dataset: its payload (`messages`) and free properties."""

    __tablename__ = "observability_dataset_records"
    __table_args__ = (Index("ix_obs_records_dataset_created", "dataset_id", "created_at", "id"),)

    dataset_id: Mapped[str] = mapped_column(
        ForeignKey("observability_datasets.id", ondelete="CASCADE")
    )
    payload: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    properties: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    source: Mapped[str] = mapped_column(String(30), default="DIRECT_INPUT")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class DatasetImportTask(WorkspaceScoped, Base):
    """An import into a dataset (events, records, conversations, a file, a campaign), run by the
    durable `observability.dataset_import` job: RUNNING, then COMPLETED, FAILED or CANCELED."""

    __tablename__ = "observability_dataset_tasks"

    dataset_id: Mapped[str] = mapped_column(
        ForeignKey("observability_datasets.id", ondelete="CASCADE"), index=True
    )
    creator_id: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20))
    progress: Mapped[int | None] = mapped_column(Integer, default=None)
    message: Mapped[str | None] = mapped_column(Text, default=None)
    # The counts of a completed import: requested, imported and skipped records.
    result: Mapped[dict[str, int] | None] = mapped_column(JSONDoc, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
