"""Business rules of span evaluations: search pages (all verdicts, or the latest per span and
evaluation), their aggregation, and pipeline results (one row per judged span)."""

from __future__ import annotations

from typing import Any

from maestrale.core.errors import AppError
from maestrale.core.pagination import MAX_PAGE_SIZE, decode_cursor, encode_cursor
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.pipelines.repository import PipelineRepository
from maestrale.observability.span_evaluations.entity import SPAN_EVALUATIONS, judged
from maestrale.observability.span_evaluations.repository import SpanEvaluationRepository
from maestrale.observability.span_evaluations.schemas import PipelineResultOut, SpanEvaluationOut
from maestrale.observability.span_evaluations.tables import SpanEvaluation
from maestrale.observability.traces import serialize
from maestrale.observability.traces.repository import Page
from maestrale.observability.traces.schemas import (
    AggregationOut,
    AggregationRequest,
)
from maestrale.observability.traces.service import Found, TelemetryService, Window, invalid
from maestrale.telemetry.search.entities import SPANS

INT64 = 2**63 - 1


def evaluation_out(row: SpanEvaluation) -> SpanEvaluationOut:
    return SpanEvaluationOut(
        customer_id=row.organization_id,
        organization_id=row.organization_id,
        workspace_id=row.workspace_id,
        user_id=row.user_id,
        service_account_id=row.service_account_id,
        trace_id=row.trace_id,
        span_id=row.span_id,
        response_id=row.response_id,
        conversation_id=row.conversation_id,
        timestamp=serialize.from_ns(row.timestamp_ns),
        evaluation_name=row.evaluation_name,
        score_value=row.score_value,
        score_label=row.score_label,
        explanation=row.explanation,
        metadata=serialize.texts(row.meta),
    )


def _page_size(page_size: int) -> None:
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise invalid(f"page_size must be between 1 and {MAX_PAGE_SIZE}")


def _cursor(values: dict[str, Any], scope: str) -> str:
    return encode_cursor({"s": scope, **values})


def _after(cursor: str | None, scope: str) -> tuple[int, int] | None:
    """The (time, row id) a cursor of this search resumes after."""
    if cursor is None:
        return None
    try:
        values = decode_cursor(cursor)
        t, k = values.get("t"), values.get("k")
    except (AppError, ValueError, TypeError) as exc:
        raise invalid("invalid cursor") from exc
    if values.get("s") != scope or type(t) is not int or type(k) is not int:
        raise invalid("invalid cursor")
    if abs(t) > INT64 or abs(k) > INT64:
        raise invalid("invalid cursor")
    return t, k


class SpanEvaluationService:
    def __init__(self, repo: SpanEvaluationRepository) -> None:
        self.repo = repo
        self.reader = TelemetryService(repo)

    async def search(
        self,
        expression: str | None,
        window: Window,
        page_size: int,
        cursor: str | None,
        *,
        latest: bool = False,
    ) -> Found:
        """Verdicts matching `expression`, newest first; with `latest`, only the newest verdict
        of each (span, evaluation name) given within the window."""
        _page_size(page_size)
        scope = "span-evaluations:latest" if latest else "span-evaluations"
        where = self.reader.where(SPAN_EVALUATIONS, expression)
        extra = [judged()]
        if latest:
            extra.append(self.repo.latest_only(window.start, window.end))
        page = Page(where, window.start, window.end, _after(cursor, scope), page_size + 1)
        rows = await self.repo.page(SPAN_EVALUATIONS, SpanEvaluation.id, page, *extra)
        more = len(rows) > page_size
        rows = rows[:page_size]
        next_cursor = None
        if more:
            next_cursor = _cursor({"t": rows[-1].timestamp_ns, "k": rows[-1].id}, scope)
        return Found([evaluation_out(r) for r in rows], next_cursor)

    async def aggregate(self, request: AggregationRequest, window: Window) -> AggregationOut:
        return await self.reader.aggregate_over(SPAN_EVALUATIONS, request, window, judged())

    async def pipeline_results(
        self,
        config_slugs: list[str],
        expression: str | None,
        window: Window,
        page_size: int,
        cursor: str | None,
    ) -> Found:
        """The spans judged by these configs (all of the workspace's when none is named) whose
        span matches `expression` (the spans' fields), newest verdict first: each with the
        latest score, label and explanation of every judge."""
        _page_size(page_size)
        config_ids = None
        if config_slugs:
            configs = await PipelineRepository(self.repo.session, self.repo.tenant).configs_by_slug(
                config_slugs
            )
            missing = sorted(set(config_slugs) - {c.slug for c in configs})
            if missing:
                raise ObservabilityError(
                    f"pipeline configs {missing} not found",
                    "PIPELINE_CONFIG_NOT_FOUND",
                    status_code=404,
                )
            config_ids = [c.id for c in configs]
        spans = self.reader.where(SPANS, expression)
        scope = "pipeline-results"
        page = await self.repo.results_page(
            config_ids, spans, window.start, window.end, _after(cursor, scope), page_size + 1
        )
        more = len(page) > page_size
        page = page[:page_size]
        verdicts = await self.repo.of_spans([row_id for row_id, _ in page], config_ids)
        by_span: dict[int, list[SpanEvaluation]] = {}
        for verdict in verdicts:
            by_span.setdefault(verdict.span_row_id, []).append(verdict)
        results = [_result(by_span[row_id], at) for row_id, at in page]
        next_cursor = None
        if more:
            next_cursor = _cursor({"t": page[-1][1], "k": page[-1][0]}, scope)
        return Found(results, next_cursor)


def _result(verdicts: list[SpanEvaluation], at: int) -> PipelineResultOut:
    """One span's row: the latest verdict of each judge (verdicts come oldest first)."""
    first = verdicts[0]
    scores: dict[str, float] = {}
    labels: dict[str, str] = {}
    explanations: dict[str, str] = {}
    for v in verdicts:
        scores[v.evaluation_name] = v.score_value
        explanations[v.evaluation_name] = v.explanation
        if v.score_label:
            labels[v.evaluation_name] = v.score_label
        else:
            labels.pop(v.evaluation_name, None)
    return PipelineResultOut(
        trace_id=first.trace_id,
        span_id=first.span_id,
        span_name=first.span_name,
        duration_ns=first.span_duration_ns,
        evaluated_at=serialize.from_ns(at),
        judge_scores=scores,
        judge_labels=labels,
        judge_explanations=explanations,
    )
