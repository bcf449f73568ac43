"""Webhooks, their deliveries and the keys that refuse replays.

A webhook's id is its receiving URL's secret part too (≥ 128 random bits: nobody finds a URL by
guessing). Its signing secret and encryption key are sealed (`core.crypto`), never stored plain.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class Webhook(WorkspaceScoped, Base):
    __tablename__ = "webhooks"
    __table_args__ = (Index("ix_webhooks_ws_created", "workspace_id", "created_at", "id"),)

    creator_id: Mapped[str] = mapped_column(String(200))
    owner_type: Mapped[str] = mapped_column(String(16))  # workspace | user
    provider: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(256))
    # The signing secret (for notion: the verification token it sent), sealed; null until known.
    secret_sealed: Mapped[str | None] = mapped_column(Text, default=None)
    encryption_key_sealed: Mapped[str | None] = mapped_column(Text, default=None)
    # When `get_signing_secret` returned the secret: it is readable once.
    secret_read_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    url_verified: Mapped[bool | None] = mapped_column(Boolean, default=None)
    signature_hash_algorithm: Mapped[str | None] = mapped_column(String(16), default=None)
    signature_header_name: Mapped[str | None] = mapped_column(String(128), default=None)
    validity_period_second: Mapped[int | None] = mapped_column(Integer, default=None)
    signature_extractor_regex: Mapped[str | None] = mapped_column(Text, default=None)
    timestamp_extractor_regex: Mapped[str | None] = mapped_column(Text, default=None)
    signature_payload_pattern: Mapped[str | None] = mapped_column(Text, default=None)
    signature_encoding: Mapped[str | None] = mapped_column(String(16), default=None)
    success_status_code: Mapped[int | None] = mapped_column(Integer, default=None)
    event_type_path: Mapped[str | None] = mapped_column(Text, default=None)
    # What the provider's preset adds and the SDK does not model: the header that carries the
    # timestamp (Slack) and the one that carries the delivery's id (GitHub, Linear).
    timestamp_header_name: Mapped[str | None] = mapped_column(String(128), default=None)
    event_id_header_name: Mapped[str | None] = mapped_column(String(128), default=None)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WebhookDelivery(WorkspaceScoped, Base):
    """One delivery received: accepted (and queued) or refused, and what it started."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_hook_received", "webhook_id", "received_at", "id"),
    )

    webhook_id: Mapped[str] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # accepted | url_verification | bad_signature | stale | replayed | loop_cut
    status: Mapped[str] = mapped_column(String(32))
    verified: Mapped[bool] = mapped_column(Boolean)
    event_type: Mapped[str | None] = mapped_column(String(256), default=None)
    event_id: Mapped[str | None] = mapped_column(String(256), default=None)
    depth: Mapped[int] = mapped_column(Integer, default=0)
    # The body as received (UTF-8 text; bytes that are not UTF-8 are replaced) and the headers
    # kept (never Authorization or Cookie). Refused deliveries keep no body.
    body: Mapped[str | None] = mapped_column(Text, default=None)
    headers: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    # What the delivery started (written by the triggers' dispatch job) and when.
    started: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    dispatched_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class WebhookReplayKey(Base):
    """A signature or event id seen by a webhook, until `expires_at`: the primary key makes a
    second insert of the same key fail, whichever replica tries, so a replay is refused without
    a read-then-write race."""

    __tablename__ = "webhook_replay_keys"
    __table_args__ = (Index("ix_webhook_replay_keys_expires", "expires_at"),)

    webhook_id: Mapped[str] = mapped_column(
        ForeignKey("webhooks.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
