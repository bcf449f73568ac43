"""The query parameters of the log routes of workflows: a page of log records, and where a log
stream starts. Each is read (and checked) once the route has found its scope, so an unknown
execution answers 404 before a bad cursor or event id answers 400."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal

from fastapi import Header, Query

from maestrale.core.errors import BadRequest
from maestrale.core.validation import INT64_MAX
from maestrale.workflows.telemetry.logs import page_of
from maestrale.workflows.telemetry.repository import LogPage

Limit = Annotated[int, Query(ge=1, le=1000)]
Cursor = Annotated[str | None, Query(max_length=1000)]
Order = Literal["asc", "desc"]
Resume = Annotated[str | None, Query(max_length=20)]
ResumeHeader = Annotated[str | None, Header(alias="last-event-id", max_length=20)]


@dataclass(frozen=True, slots=True)
class LogQuery:
    """The query parameters of a page of log records: a window and order (the first page's),
    or the cursor of the page before; read once the scope is known."""

    after: datetime | None
    before: datetime | None
    order: str
    cursor: str | None
    limit: int

    def page(self) -> LogPage:
        return page_of(self.cursor, self.order, self.after, self.before)


def log_query(
    after: datetime | None = None,
    before: datetime | None = None,
    order: Order = "asc",
    cursor: Cursor = None,
    limit: Limit = 50,
) -> LogQuery:
    return LogQuery(after, before, order, cursor, limit)


@dataclass(frozen=True, slots=True)
class StreamStart:
    """Where a log stream starts: after the last event id (the header wins over the query
    parameter), else at `after`, else at the start; read once the scope is known."""

    after: datetime | None
    last_event_id: str | None
    last_event_id_header: str | None

    def resume(self) -> int | None:
        """The row id the stream resumes after."""
        value = self.last_event_id_header or self.last_event_id
        if value is None:
            return None
        if not value.isascii() or not value.isdigit() or int(value) > INT64_MAX:
            raise BadRequest("last event id must be a log id", code="invalid_last_event_id")
        return int(value)


def stream_start(
    after: datetime | None = None,
    last_event_id: Resume = None,
    last_event_id_header: ResumeHeader = None,
) -> StreamStart:
    return StreamStart(after, last_event_id, last_event_id_header)
