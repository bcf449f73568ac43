"""The owners of Temporal schedules."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class Schedule(WorkspaceScoped, Base):
    """The owner of a Temporal schedule (id = the schedule id): the schedule itself and its state
    live in Temporal. `spec` is its spec as the client wrote it: Temporal rewrites cron
    expressions into calendars, so an update of one could not otherwise tell them apart."""

    __tablename__ = "workflow_schedules"

    workflow_id: Mapped[str] = mapped_column(ForeignKey("workflows.id", ondelete="CASCADE"))
    deployment_name: Mapped[str | None] = mapped_column(String(200), default=None)
    # Who made it (the `user_id` filter of the list); null for a key bound to no user.
    user_id: Mapped[str | None] = mapped_column(String(36), default=None)
    spec: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
