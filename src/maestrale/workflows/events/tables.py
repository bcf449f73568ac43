"""The events that workers report, in arrival order."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime


class WorkflowEvent(Base):
    """An event a worker reported (v1 events API), in arrival order (`seq`, the cursor)."""

    __tablename__ = "workflow_events"
    __table_args__ = (
        Index("ix_workflow_events_ws_seq", "workspace_id", "seq"),
        Index("ix_workflow_events_exec_seq", "execution_id", "seq"),
        Index("ix_workflow_events_root_seq", "root_execution_id", "seq"),
        UniqueConstraint("workspace_id", "event_id", name="uq_workflow_events_ws_event"),
    )

    seq: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    event_id: Mapped[str] = mapped_column(String(200))
    execution_id: Mapped[str] = mapped_column(String(256))
    root_execution_id: Mapped[str | None] = mapped_column(String(256), default=None)
    run_id: Mapped[str | None] = mapped_column(String(64), default=None)
    workflow_name: Mapped[str | None] = mapped_column(String(128), default=None)
    event_type: Mapped[str] = mapped_column(String(64))
    timestamp_ns: Mapped[int] = mapped_column(BigInteger)
    body: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
