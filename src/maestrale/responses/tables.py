"""Stored responses, and the events of those run in the background.

A stored response is a turn of a conversation (`conversation_id`): its input entries start at
`first_seq` (`input_count` of them) and its output entries follow, up to `end_seq`; the next
response of a `previous_response_id` chain appends to that conversation while `end_seq` is still
its entry count (its tip), and otherwise starts a copy of its first `end_seq` entries (a branch).
`body` is the response object as last reported; `request` the request a background response
runs (on the job queue), whose events (`ResponseEvent`) are kept so that a client can stream it
by id, from any sequence number, on any replica.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class StoredResponse(WorkspaceScoped, Base):
    __tablename__ = "responses"
    __table_args__ = (Index("ix_responses_ws_created", "workspace_id", "created_at", "id"),)

    status: Mapped[str] = mapped_column(String(16))
    conversation_id: Mapped[str | None] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), default=None, index=True
    )
    first_seq: Mapped[int] = mapped_column(Integer, default=0)
    input_count: Mapped[int] = mapped_column(Integer, default=0)
    end_seq: Mapped[int] = mapped_column(Integer, default=0)
    previous_response_id: Mapped[str | None] = mapped_column(String(200), default=None)
    # Whether this response started its conversation (a first turn, or a branch's copy): the
    # conversation is deleted with it when no other response continues it.
    started: Mapped[bool] = mapped_column(Boolean, default=False)
    body: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    request: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    job_id: Mapped[str | None] = mapped_column(String(64), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ResponseEvent(Base):
    __tablename__ = "response_events"

    response_id: Mapped[str] = mapped_column(
        ForeignKey("responses.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    body: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
