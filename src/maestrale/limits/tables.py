"""Per-organization limits set at runtime (admin API, `maestrale limits`), over the config file's
defaults. Counters are not stored here: see `maestrale.limits.counters`."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, Float, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, UTCDateTime


class OrganizationLimits(Base):
    """Overrides of one organization. A NULL column means "use the configured default";
    `requests_per_second = 0` and `no_monthly_limit = true` mean "explicitly unlimited"."""

    __tablename__ = "organization_limits"

    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    requests_per_second: Mapped[int | None] = mapped_column(Integer, default=None)
    monthly_spend_limit: Mapped[float | None] = mapped_column(Float, default=None)
    no_monthly_limit: Mapped[bool | None] = mapped_column(Boolean, default=None)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ModelTokenLimit(Base):
    __tablename__ = "model_token_limits"

    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    tokens_per_minute: Mapped[int | None] = mapped_column(BigInteger, default=None)
    tokens_per_month: Mapped[int | None] = mapped_column(BigInteger, default=None)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
