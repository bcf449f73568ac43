"""The workflows control plane: workflows, deployments, their workers, registrations, the
execution index, events and the schedules' owners. Temporal runs the executions and stays the
authority on their state; these rows are what the platform knows around them.

A workflow is a name in a workspace; a deployment is a name in a workspace and the Temporal task
queue of its workers; a registration is a workflow's definition as a deployment's workers sent it.
Execution ids are Temporal workflow ids, unique in the Temporal namespace and so unique here
across workspaces (a custom id another workspace holds is refused).
"""

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
    UniqueConstraint,
)
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


class Workflow(WorkspaceScoped, Base):
    __tablename__ = "workflows"
    __table_args__ = (UniqueConstraint("workspace_id", "name", name="uq_workflows_ws_name"),)

    name: Mapped[str] = mapped_column(String(128))
    display_name: Mapped[str] = mapped_column(String(256))
    description: Mapped[str | None] = mapped_column(String(4000), default=None)
    tags: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    is_technical: Mapped[bool] = mapped_column(Boolean, default=False)
    available_in_chat_assistant: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Deployment(WorkspaceScoped, Base):
    __tablename__ = "workflow_deployments"
    __table_args__ = (
        UniqueConstraint("workspace_id", "name", name="uq_workflow_deployments_ws_name"),
    )

    name: Mapped[str] = mapped_column(String(200))
    location: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DeploymentWorker(WorkspaceScoped, Base):
    """A worker process of a deployment, as it names itself; alive while it beats."""

    __tablename__ = "workflow_workers"
    __table_args__ = (
        UniqueConstraint("deployment_id", "name", name="uq_workflow_workers_deployment_name"),
    )

    deployment_id: Mapped[str] = mapped_column(
        ForeignKey("workflow_deployments.id", ondelete="CASCADE")
    )
    name: Mapped[str] = mapped_column(String(256))
    location: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Registration(WorkspaceScoped, Base):
    """A workflow's definition as a deployment's workers registered it: one row per distinct
    definition (`digest`), the latest of a (workflow, deployment) being the one in use."""

    __tablename__ = "workflow_registrations"
    __table_args__ = (
        UniqueConstraint(
            "workflow_id", "deployment_id", "digest", name="uq_workflow_registrations_def"
        ),
        Index("ix_workflow_registrations_ws_created", "workspace_id", "created_at"),
    )

    workflow_id: Mapped[str] = mapped_column(ForeignKey("workflows.id", ondelete="CASCADE"))
    deployment_id: Mapped[str] = mapped_column(
        ForeignKey("workflow_deployments.id", ondelete="CASCADE")
    )
    digest: Mapped[str] = mapped_column(String(64))
    definition: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


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
