"""Triggers and their events.

A trigger binds an event source (an inbound webhook of its workspace) to a handler: what its
action starts (`primitive_id`: a workflow or an agent) when a delivery passes its filter. A
trigger event is one delivery that fired one trigger; `(trigger_id, delivery_id)` is unique, so a
retried dispatch finds the event it wrote before instead of starting the work again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class TriggerStatus:
    # Written before the work is started: a crashed attempt leaves it, and the retry looks for
    # what that attempt may have started before starting anything.
    SUBMITTED = "SUBMITTED"
    # The work could not be started (its workflow or agent is gone, Temporal refused it...).
    SUBMISSION_FAILED = "SUBMISSION_FAILED"
    TRIGGERED = "TRIGGERED"
    # The trigger could not decide: its filter failed on this event.
    TRIGGER_FAILED = "TRIGGER_FAILED"


class Trigger(WorkspaceScoped, Base):
    __tablename__ = "triggers"
    __table_args__ = (
        Index("ix_triggers_ws_source", "workspace_id", "event_source_id"),
        Index("ix_triggers_ws_created", "workspace_id", "created_at", "id"),
    )

    creator_id: Mapped[str] = mapped_column(String(200))
    owner_type: Mapped[str] = mapped_column(String(16))
    # The webhook (no foreign key: a deleted webhook's triggers stop firing, but stay readable
    # with their events, from `event_source`, until they are deleted themselves).
    event_source_id: Mapped[str] = mapped_column(String(200))
    # The webhook as it was served when the trigger was made: what `event_source` shows once
    # the webhook is gone.
    event_source: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    handler: Mapped[str] = mapped_column(String(32))
    action_type: Mapped[str] = mapped_column(String(32))
    primitive_id: Mapped[str] = mapped_column(String(200))
    filters: Mapped[str | None] = mapped_column(Text, default=None)
    title: Mapped[str] = mapped_column(String(512))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class TriggerEvent(WorkspaceScoped, Base):
    """One delivery that fired one trigger (id = the SDK's `event_id`), and what it started."""

    __tablename__ = "trigger_events"
    __table_args__ = (
        UniqueConstraint("trigger_id", "delivery_id", name="uq_trigger_events_trigger_delivery"),
        Index("ix_trigger_events_trigger_received", "trigger_id", "received_at", "id"),
    )

    trigger_id: Mapped[str] = mapped_column(ForeignKey("triggers.id", ondelete="CASCADE"))
    delivery_id: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(32))
    received_at: Mapped[datetime] = mapped_column(UTCDateTime)
    submitted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    triggered_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    detail: Mapped[str | None] = mapped_column(Text, default=None)
    url: Mapped[str | None] = mapped_column(Text, default=None)
    # What it started: "workflow_execution" or "conversation", and its id.
    started_kind: Mapped[str | None] = mapped_column(String(32), default=None)
    started_id: Mapped[str | None] = mapped_column(String(200), default=None)
    # The depth the started work runs at (the delivery's + 1): what its outbound calls carry.
    depth: Mapped[int] = mapped_column(default=1)
