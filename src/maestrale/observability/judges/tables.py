"""Judges: automatic evaluators, with their earlier revisions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class Judge(WorkspaceScoped, Base):
    """An automatic evaluator: a model, instructions and an output (CLASSIFICATION options or a
    REGRESSION range). Deleting it only sets `deleted_at`."""

    __tablename__ = "observability_judges"
    __table_args__ = (Index("ix_obs_judges_ws_created", "workspace_id", "created_at", "id"),)

    name: Mapped[str] = mapped_column(String(500))
    description: Mapped[str] = mapped_column(Text, default="")
    model_name: Mapped[str] = mapped_column(String(200))
    output: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    output_type: Mapped[str] = mapped_column(String(20))
    instructions: Mapped[str] = mapped_column(Text, default="")
    tools: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    owner_id: Mapped[str] = mapped_column(String(200))
    # Revisions (judges.service): the judge's id always holds its latest definition;
    # each earlier one is kept in a row of its own, linked both ways and to the first one.
    up_revision: Mapped[str | None] = mapped_column(String(200), default=None)
    down_revision: Mapped[str | None] = mapped_column(String(200), default=None)
    base_revision: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
