"""The console's sign-in sessions: the browser holds a random token in an HttpOnly cookie; the
row holds its hash, the keys sealed at rest and the CSRF token of the pages."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String, Text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, UTCDateTime


class ConsoleSession(Base):
    __tablename__ = "console_sessions"

    # SHA-256 (hex) of the cookie's token: a copy of the table opens no session.
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    # The keys, sealed with `services.secrets` (purpose bound to this table and column).
    api_key: Mapped[str] = mapped_column(Text)
    admin_key: Mapped[str | None] = mapped_column(Text, default=None)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
