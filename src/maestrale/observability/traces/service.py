"""Business rules of the telemetry store's reads: search pages of traces, spans and logs (an
opaque cursor over (time, key)), a trace, its spans, a span, and aggregations."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_

from maestrale.core.errors import AppError
from maestrale.core.pagination import MAX_PAGE_SIZE, decode_cursor, encode_cursor
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.traces import serialize
from maestrale.observability.traces.aggregate_repository import AggregateRepository
from maestrale.observability.traces.aggregation import plan
from maestrale.observability.traces.repository import Page, TelemetryRepository
from maestrale.observability.traces.schemas import (
    AggregationMeta,
    AggregationOut,
    AggregationRequest,
    AggregationRow,
    LogOut,
    SpanOut,
    TraceOut,
)
from maestrale.telemetry.search import compile as search_compile
from maestrale.telemetry.search.entities import LOGS, SPANS, TRACES
from maestrale.telemetry.search.errors import SearchError
from maestrale.telemetry.search.model import Entity
from maestrale.telemetry.tables import TelemetrySpan, TelemetryTrace

INT64 = 2**63 - 1
_TRACE_ID = re.compile(r"[0-9a-fA-F]{1,32}")
_SPAN_ID = re.compile(r"[0-9a-fA-F]{1,16}")
AGGREGABLE = {"traces": TRACES, "spans": SPANS}


def invalid(message: str) -> ObservabilityError:
    return ObservabilityError(message, "VALIDATION_ERROR")


def not_found(message: str) -> ObservabilityError:
    return ObservabilityError(message, "SEARCH_NOT_FOUND", status_code=404)


@dataclass(frozen=True, slots=True)
class Window:
    """The `from` (included) and `to` (excluded) of a request, in nanoseconds."""

    start: int | None = None
    end: int | None = None

    @classmethod
    def of(cls, start: datetime | None, end: datetime | None) -> Window:
        window = cls(_ns(start), _ns(end))
        if window.start is not None and window.end is not None and window.start > window.end:
            raise invalid("`from` must not be after `to`")
        return window


def _ns(value: datetime | None) -> int | None:
    if value is None:
        return None
    return max(-INT64, min(INT64, serialize.to_ns(value)))


@dataclass(frozen=True, slots=True)
class Found:
    """A page of rows, and the cursor of the next page (None on the last page)."""

    results: list[Any]
    cursor: str | None


class TelemetryService:
    def __init__(self, repo: TelemetryRepository) -> None:
        self.repo = repo

    def where(self, entity: Entity, expression: str | None) -> ColumnElement[bool] | None:
        if expression is None or not expression.strip():
            return None
        try:
            return search_compile.where(entity, expression, self.repo.dialect)
        except SearchError as exc:
            raise ObservabilityError(
                exc.message, exc.error_code, status_code=exc.status_code
            ) from exc

    async def search_traces(
        self, expression: str | None, window: Window, page_size: int, cursor: str | None
    ) -> Found:
        return await self._search(TRACES, "traces", expression, window, page_size, cursor)

    async def search_spans(
        self, expression: str | None, window: Window, page_size: int, cursor: str | None
    ) -> Found:
        return await self._search(SPANS, "spans", expression, window, page_size, cursor)

    async def search_logs(
        self,
        expression: str | None,
        order: str,
        window: Window,
        page_size: int,
        cursor: str | None,
    ) -> Found:
        descending = order == "desc"
        return await self._search(
            LOGS, "logs", expression, window, page_size, cursor, descending=descending
        )

    async def trace(self, trace_id: str) -> TraceOut:
        row = await self.repo.trace(_trace_id(trace_id)) if _TRACE_ID.fullmatch(trace_id) else None
        if row is None:
            raise not_found(f"trace {trace_id!r} not found")
        return serialize.trace_out(row)

    async def trace_spans(
        self, trace_id: str, window: Window, page_size: int, cursor: str | None
    ) -> Found:
        """The trace's spans, by start time (the first first)."""
        if not _TRACE_ID.fullmatch(trace_id):
            raise not_found(f"trace {trace_id!r} not found")
        tid = _trace_id(trace_id)
        found = await self._search(
            SPANS,
            f"trace:{tid}",
            None,
            window,
            page_size,
            cursor,
            descending=False,
            extra=(TelemetrySpan.trace_id == tid,),
        )
        if (
            not found.results
            and cursor is None
            and await self.repo.trace(tid) is None
            and not await self.repo.has_spans(tid)
        ):
            raise not_found(f"trace {trace_id!r} not found")
        return found

    async def span(self, trace_id: str, span_id: str, window: Window) -> SpanOut:
        row = None
        if _TRACE_ID.fullmatch(trace_id) and _SPAN_ID.fullmatch(span_id):
            row = await self.repo.span(
                _trace_id(trace_id), span_id.lower(), window.start, window.end
            )
        if row is None:
            raise not_found(f"span {span_id!r} of trace {trace_id!r} not found")
        return serialize.span_out(row)

    async def aggregate(
        self, entity_name: str, request: AggregationRequest, window: Window
    ) -> AggregationOut:
        return await self.aggregate_over(AGGREGABLE[entity_name], request, window)

    async def aggregate_over(
        self,
        entity: Entity,
        request: AggregationRequest,
        window: Window,
        scope: ColumnElement[bool] | None = None,
    ) -> AggregationOut:
        """The aggregation of `entity`'s records in the window that match the request's search
        expression (and `scope`, a condition of the caller's)."""
        end = window.end if window.end is not None else time.time_ns()
        start = window.start
        if start is None:
            earliest = await self.repo.earliest(entity)
            start = min(earliest if earliest is not None else end, end)
        checked = plan(entity, request, start, end)
        where = self.where(entity, request.search_expression)
        if scope is not None:
            where = scope if where is None else and_(where, scope)
        rows = await AggregateRepository(self.repo).aggregate(
            entity, checked, where, window.start, window.end
        )
        data = [
            AggregationRow(
                metric_name=checked.metric_name,
                time_bucket=serialize.from_ns(int(row["b"]))
                if checked.unit is not None and row.get("b") is not None
                else None,
                dimensions={d.name: row[f"d{i}"] for i, d in enumerate(checked.dimensions)},
                metric_value=row["v"],
            )
            for row in rows
        ]
        meta = AggregationMeta(
            from_timestamp=serialize.from_ns(start),
            to_timestamp=serialize.from_ns(end),
            granularity_seconds=checked.granularity_seconds,
        )
        return AggregationOut(data=data, meta=meta)

    async def _search(
        self,
        entity: Entity,
        scope: str,
        expression: str | None,
        window: Window,
        page_size: int,
        cursor: str | None,
        *,
        descending: bool = True,
        extra: tuple[ColumnElement[bool], ...] = (),
    ) -> Found:
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise invalid(f"page_size must be between 1 and {MAX_PAGE_SIZE}")
        # A cursor names the search it pages (and its order): another's is refused.
        scope = f"{scope}:{'desc' if descending else 'asc'}"
        key_kind = str if entity is TRACES else int
        after = _decode(cursor, scope, key_kind) if cursor else None
        where = self.where(entity, expression)
        # Pages follow (time, key): the trace id of a trace, the row id of a span or a log.
        key = TelemetryTrace.trace_id if entity is TRACES else entity.table.id
        page = Page(where, window.start, window.end, after, page_size + 1, descending)
        rows = await self.repo.page(entity, key, page, *extra)
        more = len(rows) > page_size
        rows = rows[:page_size]
        next_cursor = None
        if more:
            last = rows[-1]
            t = last.start_ns if entity is not LOGS else last.timestamp_ns
            k = last.trace_id if entity is TRACES else last.id
            next_cursor = encode_cursor({"s": scope, "t": t, "k": k})
        return Found([_out(entity, r) for r in rows], next_cursor)


def _out(entity: Entity, row: Any) -> TraceOut | SpanOut | LogOut:
    if entity is TRACES:
        return serialize.trace_out(row)
    if entity is SPANS:
        return serialize.span_out(row)
    return serialize.log_out(row)


def _trace_id(trace_id: str) -> str:
    return trace_id.lower()


def _decode(cursor: str, scope: str, key_kind: type) -> tuple[int, Any]:
    try:
        values = decode_cursor(cursor)
    except AppError as exc:
        raise invalid("invalid cursor") from exc
    t, k = values.get("t"), values.get("k")
    ok = values.get("s") == scope and isinstance(t, int) and abs(t) <= INT64
    if isinstance(k, str):
        ok = ok and key_kind is str and len(k) <= 32
    elif isinstance(k, int) and not isinstance(k, bool):
        ok = ok and key_kind is int and abs(k) <= INT64
    else:
        ok = False
    if not ok or not isinstance(t, int) or isinstance(t, bool):
        raise invalid("invalid cursor")
    return t, k
