"""Admin tables: invitations, user groups (members and workspace assignments), the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.ids import new_id


class Invitation(Base):
    """A pending invitation to the organization; consumed when a user with that e-mail is
    created (its roles and workspaces are then applied)."""

    __tablename__ = "admin_invitations"
    __table_args__ = (UniqueConstraint("organization_id", "email"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    email: Mapped[str] = mapped_column(String(320))
    roles: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    workspace_ids: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    subscription_types: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    email_language: Mapped[str | None] = mapped_column(String(10), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class UserGroup(Base):
    __tablename__ = "user_groups"
    __table_args__ = (UniqueConstraint("organization_id", "name"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(String(2000), default=None)
    target_type: Mapped[str] = mapped_column(String(1), default="W")  # W workspace | O org
    organization_role: Mapped[str | None] = mapped_column(String(64), default=None)
    parent_group_ids: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class UserGroupMember(Base):
    __tablename__ = "user_group_members"

    group_id: Mapped[str] = mapped_column(
        ForeignKey("user_groups.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class UserGroupWorkspace(Base):
    """A group assigned to a workspace: its members are provisioned there with these roles."""

    __tablename__ = "user_group_workspaces"

    group_id: Mapped[str] = mapped_column(
        ForeignKey("user_groups.id", ondelete="CASCADE"), primary_key=True
    )
    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    roles: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AuditEntry(Base):
    """One admin change: who (key, user), what (action, target), when, and before/after.

    Never holds a secret: keys appear by id and masked form only.
    """

    __tablename__ = "admin_audit_log"
    __table_args__ = (Index("ix_admin_audit_log_org_created", "organization_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    organization_id: Mapped[str] = mapped_column(String(36))
    actor_key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    actor_user_id: Mapped[str | None] = mapped_column(String(36), default=None)
    actor: Mapped[str] = mapped_column(String(64))  # admin_api | cli
    action: Mapped[str] = mapped_column(String(64))
    target_type: Mapped[str] = mapped_column(String(32))
    target_id: Mapped[str | None] = mapped_column(String(200), default=None)
    before: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    after: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    request_id: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
