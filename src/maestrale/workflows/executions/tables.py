"""The execution index. Temporal runs the executions and stays the authority on their state;
a row is what the platform knows around one. Execution ids are Temporal workflow ids, unique in
the Temporal namespace and so unique here across workspaces (a custom id another workspace holds
is refused).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class ExecutionStatus:
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    TERMINATED = "TERMINATED"
    CONTINUED_AS_NEW = "CONTINUED_AS_NEW"
    TIMED_OUT = "TIMED_OUT"

    CLOSED = frozenset({COMPLETED, FAILED, CANCELED, TERMINATED, CONTINUED_AS_NEW, TIMED_OUT})
    ALL = CLOSED | {RUNNING}


class Execution(WorkspaceScoped, Base):
    """The index of an execution (id = the Temporal workflow id): what it runs, where, for whom,
    and its last known state (Temporal's, refreshed when read)."""

    __tablename__ = "workflow_executions"
    __table_args__ = (
        Index("ix_workflow_executions_ws_start", "workspace_id", "start_time"),
        Index("ix_workflow_executions_ws_run", "workspace_id", "run_id"),
        Index("ix_workflow_executions_root", "root_execution_id"),
    )

    workflow_id: Mapped[str | None] = mapped_column(
        ForeignKey("workflows.id", ondelete="SET NULL"), default=None
    )
    workflow_name: Mapped[str] = mapped_column(String(128))
    deployment_name: Mapped[str | None] = mapped_column(String(200), default=None)
    run_id: Mapped[str | None] = mapped_column(String(64), default=None)
    status: Mapped[str] = mapped_column(String(32), default=ExecutionStatus.RUNNING)
    start_time: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    end_time: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    result: Mapped[Any] = mapped_column(JSONDoc, default=None)
    parent_execution_id: Mapped[str | None] = mapped_column(String(256), default=None)
    root_execution_id: Mapped[str] = mapped_column(String(256))
    user_id: Mapped[str | None] = mapped_column(String(36), default=None)
    # sha256 of the execution token handed to the worker in the start payload: the worker's
    # executions/register proves with it that it runs the execution this row describes.
    token_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
