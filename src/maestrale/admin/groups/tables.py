"""User groups: their members and their workspace assignments."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.ids import new_id


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
