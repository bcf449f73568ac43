"""Traces, spans and logs of the telemetry store: search, get and aggregate (beta
observability). Search pages come newest first (a trace's spans, first first) with `cursor`, the
opaque cursor of the next page, and `next`, the URL of the next page to send the same body to;
both null on the last page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Body, Depends, Query, Request

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.routing import Work
from maestrale.observability.errors import observability_router
from maestrale.observability.traces.repository import TelemetryRepository
from maestrale.observability.traces.schemas import (
    AggregationOut,
    AggregationRequest,
    GetLogsOut,
    GetSpansOut,
    GetTracesOut,
    LogFeed,
    LogsRequest,
    SpanFeed,
    SpanOut,
    SpansRequest,
    TraceFeed,
    TraceOut,
    TracesRequest,
)
from maestrale.observability.traces.service import TelemetryService, Window

router = observability_router(prefix="/observability", tags=["observability"])


def _service(work: Work, tenant: CurrentTenant, settings: AppSettings) -> TelemetryService:
    budget = settings.observability_search_timeout
    return TelemetryService(TelemetryRepository(work.session, tenant, budget=budget))


Telemetry = Annotated[TelemetryService, Depends(_service)]
From = Annotated[
    datetime | None, Query(alias="from", description="start time, included (RFC 3339)")
]
To = Annotated[datetime | None, Query(description="end time, excluded (RFC 3339)")]
PageSize = Annotated[int, Query(description="rows per page, 1 to 1000")]
Cursor = Annotated[str | None, Query(max_length=4096, description="`cursor` of the last page")]


@dataclass(frozen=True, slots=True)
class SearchPage:
    """The query parameters of a page of a search: its time range, size and cursor."""

    from_: datetime | None
    to: datetime | None
    size: int
    cursor: str | None

    @property
    def window(self) -> Window:
        return Window.of(self.from_, self.to)


def search_page(
    from_: From = None, to: To = None, page_size: PageSize = 50, cursor: Cursor = None
) -> SearchPage:
    return SearchPage(from_, to, page_size, cursor)


Page = Annotated[SearchPage, Depends(search_page)]


def next_url(request: Request, cursor: str | None) -> str | None:
    if cursor is None:
        return None
    url = request.url.include_query_params(cursor=cursor)
    return f"{url.path}?{url.query}"


@router.post("/traces/search")
async def search_traces(
    request: Request,
    telemetry: Telemetry,
    page: Page,
    body: Annotated[TracesRequest | None, Body()] = None,
) -> GetTracesOut:
    """Search the workspace's traces with `search_expression` (`service_name = 'api' AND
    duration_ns > 5000000000`), newest first by start time, within `from` and `to`."""
    expression = body.search_expression if body else None
    found = await telemetry.search_traces(expression, page.window, page.size, page.cursor)
    feed = TraceFeed(
        results=found.results, cursor=found.cursor, next=next_url(request, found.cursor)
    )
    return GetTracesOut(traces=feed)


@router.post("/traces/aggregate")
async def aggregate_traces(
    body: AggregationRequest, telemetry: Telemetry, from_: From = None, to: To = None
) -> AggregationOut:
    """A metric (`{measure, aggregation}`) over the traces matching `search_expression`,
    grouped by `dimensions` (fields, or map keys) and by time buckets (`time_dimension`)."""
    return await telemetry.aggregate("traces", body, Window.of(from_, to))


@router.get("/traces/{trace_id}")
async def get_trace(trace_id: str, telemetry: Telemetry) -> TraceOut:
    """A trace's summary: its root span, times, counts, tokens, models and tools used."""
    return await telemetry.trace(trace_id)


@router.get("/traces/{trace_id}/spans")
async def get_trace_spans(
    request: Request,
    trace_id: str,
    telemetry: Telemetry,
    page: Page,
) -> GetSpansOut:
    """The spans of a trace, by start time (the first first), a page at a time."""
    found = await telemetry.trace_spans(trace_id, page.window, page.size, page.cursor)
    feed = SpanFeed(
        results=found.results, cursor=found.cursor, next=next_url(request, found.cursor)
    )
    return GetSpansOut(spans=feed)


@router.get("/traces/{trace_id}/spans/{span_id}")
async def get_span(
    trace_id: str, span_id: str, telemetry: Telemetry, from_: From = None, to: To = None
) -> SpanOut:
    """One span in full: its GenAI request, contents, usage and attributes."""
    return await telemetry.span(trace_id, span_id, Window.of(from_, to))


@router.post("/spans/search")
async def search_spans(
    request: Request,
    telemetry: Telemetry,
    page: Page,
    body: Annotated[SpansRequest | None, Body()] = None,
) -> GetSpansOut:
    """Search the workspace's spans with `search_expression`, newest first by start time."""
    expression = body.search_expression if body else None
    found = await telemetry.search_spans(expression, page.window, page.size, page.cursor)
    feed = SpanFeed(
        results=found.results, cursor=found.cursor, next=next_url(request, found.cursor)
    )
    return GetSpansOut(spans=feed)


@router.post("/spans/aggregate")
async def aggregate_spans(
    body: AggregationRequest, telemetry: Telemetry, from_: From = None, to: To = None
) -> AggregationOut:
    """A metric over the spans matching `search_expression`, grouped by `dimensions` and by
    time buckets; percentiles (p50 to p99) interpolate as Postgres' percentile_cont."""
    return await telemetry.aggregate("spans", body, Window.of(from_, to))


@router.post("/logs/search")
async def search_logs(
    request: Request,
    telemetry: Telemetry,
    page: Page,
    body: Annotated[LogsRequest | None, Body()] = None,
) -> GetLogsOut:
    """Search the workspace's log records with `search_expression`, by time in `order`
    (`desc`, the newest first, by default)."""
    body = body or LogsRequest()
    found = await telemetry.search_logs(
        body.search_expression, body.order, page.window, page.size, page.cursor
    )
    feed = LogFeed(results=found.results, cursor=found.cursor, next=next_url(request, found.cursor))
    return GetLogsOut(logs=feed)
