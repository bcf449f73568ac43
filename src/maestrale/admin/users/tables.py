"""Invitations to an organization."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
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
