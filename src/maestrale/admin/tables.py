"""The admin audit log (shared by every admin sub-domain and the command line)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.ids import new_id


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
