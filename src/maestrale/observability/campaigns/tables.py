"""Campaigns: a judge run over selected events, and the verdict of each event."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class Campaign(WorkspaceScoped, Base):
    """A judge run over the events selected by `search_params` at creation (at most
    `max_nb_events`), judged one by one in a durable job. Deleting it only sets `deleted_at`
    (its job stops before the next event)."""

    __tablename__ = "observability_campaigns"
    __table_args__ = (Index("ix_obs_campaigns_ws_created", "workspace_id", "created_at", "id"),)

    name: Mapped[str] = mapped_column(String(500))
    description: Mapped[str] = mapped_column(Text, default="")
    owner_id: Mapped[str] = mapped_column(String(200))
    key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    user_id: Mapped[str | None] = mapped_column(String(36), default=None)
    judge_id: Mapped[str] = mapped_column(ForeignKey("observability_judges.id", ondelete="CASCADE"))
    # The judge's definition when the campaign started: later edits do not change the run.
    judge_definition: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    max_nb_events: Mapped[int] = mapped_column(Integer)
    search_params: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    status: Mapped[str] = mapped_column(String(20), default="RUNNING")
    job_id: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class CampaignEvent(Base):
    """An event selected by a campaign, in selection order, with its verdict once judged."""

    __tablename__ = "observability_campaign_events"
    __table_args__ = (Index("ix_obs_campaign_events_order", "campaign_id", "position"),)

    campaign_id: Mapped[str] = mapped_column(
        ForeignKey("observability_campaigns.id", ondelete="CASCADE"), primary_key=True
    )
    event_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    analysis: Mapped[str | None] = mapped_column(Text, default=None)
    answer: Mapped[Any] = mapped_column(JSONDoc, nullable=True, default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    judged_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
