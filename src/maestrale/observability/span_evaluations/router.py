"""Span evaluations (the verdicts of evaluation pipelines) and pipeline results: search,
latest, aggregate, fields (beta observability). Search pages come newest first with `cursor`,
the opaque cursor of the next page, and `next`, the URL of the next page to send the same body
to; both null on the last page."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Depends, Request

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.routing import Work
from maestrale.observability.errors import ObservabilityError, observability_router
from maestrale.observability.span_evaluations.entity import SPAN_EVALUATIONS
from maestrale.observability.span_evaluations.repository import SpanEvaluationRepository
from maestrale.observability.span_evaluations.schemas import (
    PipelineResultFeed,
    PipelineResultsOut,
    PipelineResultsRequest,
    SpanEvaluationFeed,
    SpanEvaluationsOut,
    SpanEvaluationsRequest,
)
from maestrale.observability.span_evaluations.service import SpanEvaluationService
from maestrale.observability.traces.fields_repository import FieldOptionsRepository
from maestrale.observability.traces.router import From, Page, SearchPage, To, next_url
from maestrale.observability.traces.schemas import AggregationOut, AggregationRequest
from maestrale.observability.traces.service import Window
from maestrale.telemetry.search.compile import resolve_field
from maestrale.telemetry.search.errors import SearchError
from maestrale.telemetry.search.fields import definition, has_options

router = observability_router(prefix="/observability", tags=["observability"])


def _service(work: Work, tenant: CurrentTenant, settings: AppSettings) -> SpanEvaluationService:
    budget = settings.observability_search_timeout
    return SpanEvaluationService(SpanEvaluationRepository(work.session, tenant, budget=budget))


def _options(work: Work, tenant: CurrentTenant, settings: AppSettings) -> FieldOptionsRepository:
    budget = settings.observability_search_timeout
    return FieldOptionsRepository(work.session, tenant, budget=budget)


Evaluations = Annotated[SpanEvaluationService, Depends(_service)]
Options = Annotated[FieldOptionsRepository, Depends(_options)]


async def _search(
    request: Request,
    evaluations: SpanEvaluationService,
    body: SpanEvaluationsRequest | None,
    page: SearchPage,
    latest: bool,
) -> SpanEvaluationsOut:
    expression = body.search_expression if body else None
    found = await evaluations.search(expression, page.window, page.size, page.cursor, latest=latest)
    feed = SpanEvaluationFeed(
        results=found.results, cursor=found.cursor, next=next_url(request, found.cursor)
    )
    return SpanEvaluationsOut(span_evaluations=feed)


@router.post("/spans/evaluations/search")
async def search_span_evaluations(
    request: Request,
    evaluations: Evaluations,
    page: Page,
    body: Annotated[SpanEvaluationsRequest | None, Body()] = None,
) -> SpanEvaluationsOut:
    """Search the span evaluations pipelines stored with `search_expression`
    (`evaluation_name = 'tone' AND score_value < 0.5`), newest first, within `from` and `to`."""
    return await _search(request, evaluations, body, page, False)


@router.post("/spans/evaluations/search/latest")
async def search_latest_span_evaluations(
    request: Request,
    evaluations: Evaluations,
    page: Page,
    body: Annotated[SpanEvaluationsRequest | None, Body()] = None,
) -> SpanEvaluationsOut:
    """Like the search, over the newest evaluation of each span and evaluation name only (the
    expression then filters those)."""
    return await _search(request, evaluations, body, page, True)


@router.post("/spans/evaluations/aggregate")
async def aggregate_span_evaluations(
    body: AggregationRequest, evaluations: Evaluations, from_: From = None, to: To = None
) -> AggregationOut:
    """Aggregate the span evaluations (`avg` of `score_value` by `evaluation_name`, per day…)."""
    return await evaluations.aggregate(body, Window.of(from_, to))


@router.get("/spans/evaluations/fields")
async def span_evaluation_fields() -> dict[str, Any]:
    """The fields a span evaluation search expression and aggregation may name."""
    return {"field_definitions": [definition(f) for f in SPAN_EVALUATIONS.fields.values()]}


@router.get("/spans/evaluations/fields/{field_name}/options")
async def span_evaluation_field_options(
    field_name: str, repo: Options, from_: From = None, to: To = None
) -> dict[str, Any]:
    """The values a span evaluation field takes in the workspace, the most recently seen first
    (null for numbers and times); an unknown field is a 404."""
    try:
        field = resolve_field(SPAN_EVALUATIONS, field_name)
    except SearchError as exc:
        raise ObservabilityError(exc.message, "FIELDS_NOT_FOUND", status_code=404) from exc
    window = Window.of(from_, to)
    if not has_options(field):
        return {"options": None}
    return {"options": await repo.options(SPAN_EVALUATIONS, field, window.start, window.end)}


@router.post("/pipeline-results/search")
async def search_pipeline_results(
    request: Request,
    body: PipelineResultsRequest,
    evaluations: Evaluations,
    page: Page,
) -> PipelineResultsOut:
    """The spans the named pipeline configs judged (by config slug; all configs when the list is
    empty), newest verdict first, each with every judge's latest score, label and explanation;
    `search_expression` keeps the spans it matches (the span search language)."""
    found = await evaluations.pipeline_results(
        body.pipeline_config_slugs,
        body.search_expression,
        page.window,
        page.size,
        page.cursor,
    )
    feed = PipelineResultFeed(
        results=found.results, cursor=found.cursor, next=next_url(request, found.cursor)
    )
    return PipelineResultsOut(pipeline_results=feed)
