"""Log records as the workflows API answers them, and the opaque cursor of a log page (it
carries the page's window and order, so the next pages need only it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from maestrale.core.errors import BadRequest
from maestrale.core.pagination import decode_cursor, encode_cursor
from maestrale.core.validation import INT64_MAX
from maestrale.telemetry.tables import TelemetryLog
from maestrale.workflows.telemetry.repository import LogPage
from maestrale.workflows.telemetry.schemas import LogRecordOut

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_ns(moment: datetime) -> int:
    """Nanoseconds since the epoch, within what the store's BIGINT columns hold (a time
    before 1970 or past 2262 bounds a window at its end)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    ns = (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000
    return min(max(ns, 0), INT64_MAX)


def from_ns(ns: int) -> datetime:
    return datetime.fromtimestamp(ns // 10**9, UTC).replace(microsecond=(ns % 10**9) // 1000)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def record(row: TelemetryLog) -> LogRecordOut:
    attributes = row.attributes if isinstance(row.attributes, dict) else {}
    return LogRecordOut(
        timestamp=from_ns(row.timestamp_ns),
        trace_id=row.trace_id,
        span_id=row.span_id,
        severity_text=row.severity_text,
        body=row.body,
        log_attributes={str(key): _text(value) for key, value in attributes.items()},
    )


def next_cursor(page: LogPage, last: TelemetryLog) -> str:
    return encode_cursor(
        {
            "o": page.order,
            "a": page.after_ns,
            "b": page.before_ns,
            "t": last.timestamp_ns,
            "i": last.id,
        }
    )


def _bound(value: Any, *, optional: bool) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
        raise BadRequest("invalid cursor", code="invalid_cursor", param="cursor")
    return value


def page_of(
    cursor: str | None, order: str, after: datetime | None, before: datetime | None
) -> LogPage:
    """The page a request reads: the cursor's when given (its window and order win), else the
    first page of the window."""
    if cursor is None:
        return LogPage(
            order=order,
            after_ns=None if after is None else to_ns(after),
            before_ns=None if before is None else to_ns(before),
        )
    value = decode_cursor(cursor)
    if value.get("o") not in ("asc", "desc"):
        raise BadRequest("invalid cursor", code="invalid_cursor", param="cursor")
    time_ns = _bound(value.get("t"), optional=False)
    row_id = _bound(value.get("i"), optional=False)
    assert time_ns is not None and row_id is not None
    return LogPage(
        order=value["o"],
        after_ns=_bound(value.get("a"), optional=True),
        before_ns=_bound(value.get("b"), optional=True),
        position=(time_ns, row_id),
    )
