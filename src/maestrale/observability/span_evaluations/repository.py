"""All SQL of span evaluations, scoped to the caller's workspace: the verdicts a pipeline run
writes (once per config and span), the latest verdict per span and evaluation, and pipeline
results (the verdicts of chosen configs, one row per span)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, desc, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from maestrale.core.pagination import keyset_after
from maestrale.observability.budget import search_budget
from maestrale.observability.span_evaluations.entity import judged
from maestrale.observability.span_evaluations.tables import SpanEvaluation as E
from maestrale.observability.traces.repository import TelemetryRepository
from maestrale.telemetry.tables import TelemetrySpan, TelemetryTrace


class SpanEvaluationRepository(TelemetryRepository):
    """Also the telemetry store's reader (search pages, the earliest time) over span
    evaluations."""

    async def add(self, values: dict[str, Any]) -> bool:
        """Store a verdict unless its config already judged the span; whether it was new."""
        row = {
            **{k: v for k, v in values.items() if k != "meta"},
            "metadata": values.get("meta", {}),
            "organization_id": self.tenant.organization_id,
            "workspace_id": self.tenant.workspace_id,
        }
        table = E.__table__
        dialect = postgresql if self.dialect == "postgresql" else sqlite
        stmt = (
            dialect.insert(table)
            .values(**row)
            .on_conflict_do_nothing(
                index_elements=[table.c.pipeline_config_id, table.c.span_row_id]
            )
            .returning(table.c.id)
        )
        return (await self.session.execute(stmt)).scalar_one_or_none() is not None

    async def count_in_traces(self, per_trace: dict[str, int]) -> None:
        """Add evaluated spans to their traces' evaluation_count."""
        for trace_id, n in sorted(per_trace.items()):  # a fixed order: no deadlock between runs
            await self.session.execute(
                update(TelemetryTrace)
                .where(
                    TelemetryTrace.workspace_id == self.tenant.workspace_id,
                    TelemetryTrace.trace_id == trace_id,
                )
                .values(evaluation_count=TelemetryTrace.evaluation_count + n)
                .execution_options(synchronize_session=False)
            )

    def latest_only(self, start: int | None, end: int | None) -> ColumnElement[bool]:
        """The condition keeping only the newest verdict of each (span, evaluation name) given
        within the time range."""
        rank = (
            func.row_number()
            .over(
                partition_by=(E.trace_id, E.span_id, E.evaluation_name),
                order_by=[E.timestamp_ns.desc(), E.id.desc()],
            )
            .label("rank")
        )
        inner = select(E.id, rank).where(E.workspace_id == self.tenant.workspace_id, judged())
        if start is not None:
            inner = inner.where(E.timestamp_ns >= start)
        if end is not None:
            inner = inner.where(E.timestamp_ns < end)
        ranked = inner.subquery()
        return E.id.in_(select(ranked.c.id).where(ranked.c.rank == 1))

    async def results_page(
        self,
        config_ids: Sequence[str] | None,
        spans: ColumnElement[bool] | None,
        start: int | None,
        end: int | None,
        after: tuple[int, int] | None,
        limit: int,
    ) -> list[tuple[int, int]]:
        """A page of the evaluated spans, newest verdict first: (span row id, time of its newest
        verdict) of spans judged by `config_ids` (any config when None) whose span matches
        `spans` (a condition on TelemetrySpan)."""
        at = func.max(E.timestamp_ns).label("at")
        inner = select(E.span_row_id, at).where(
            E.workspace_id == self.tenant.workspace_id, judged()
        )
        if config_ids is not None:
            inner = inner.where(E.pipeline_config_id.in_(list(config_ids)))
        if start is not None:
            inner = inner.where(E.timestamp_ns >= start)
        if end is not None:
            inner = inner.where(E.timestamp_ns < end)
        if spans is not None:
            matching = select(TelemetrySpan.id).where(
                TelemetrySpan.workspace_id == self.tenant.workspace_id, spans
            )
            inner = inner.where(E.span_row_id.in_(matching))
        grouped = inner.group_by(E.span_row_id).subquery()
        stmt = select(grouped.c.span_row_id, grouped.c.at)
        if after is not None:
            stmt = stmt.where(
                keyset_after([grouped.c.at, grouped.c.span_row_id], list(after), descending=True)  # type: ignore[list-item]
            )
        stmt = stmt.order_by(desc(grouped.c.at), desc(grouped.c.span_row_id)).limit(limit)
        async with search_budget(self.session, self.budget):
            rows = (await self.session.execute(stmt)).all()
        return [(int(r[0]), int(r[1])) for r in rows]

    async def of_spans(
        self, span_row_ids: Sequence[int], config_ids: Sequence[str] | None
    ) -> list[E]:
        """The verdicts of these spans (by `config_ids` when given), oldest first."""
        stmt = select(E).where(
            E.workspace_id == self.tenant.workspace_id,
            judged(),
            E.span_row_id.in_(list(span_row_ids)),
        )
        if config_ids is not None:
            stmt = stmt.where(E.pipeline_config_id.in_(list(config_ids)))
        rows = await self.session.execute(stmt.order_by(E.timestamp_ns, E.id))
        return list(rows.scalars())
