"""Tables of the registry: workflows, deployments, their workers and registrations. Temporal
runs the executions; these rows are what the platform knows around them.

A workflow is a name in a workspace; a deployment is a name in a workspace and the Temporal task
queue of its workers; a registration is a workflow's definition as a deployment's workers sent it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


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
