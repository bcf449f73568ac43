"""A workflow's metrics, from the execution index: how many executions started in a window,
how many completed and how many failed, how long the closed ones took, over time.

The index is as fresh as its rows: a run's end is written by the event that closes it (the
worker's) or by the next read of it from Temporal; one still marked RUNNING counts in
`execution_count` only."""

from __future__ import annotations

import math
from datetime import datetime

from maestrale.core.clock import as_utc
from maestrale.workflows.executions.tables import ExecutionStatus
from maestrale.workflows.metrics.repository import MetricsRepository
from maestrale.workflows.metrics.schemas import ScalarMetric, TimeSeriesMetric, WorkflowMetrics
from maestrale.workflows.registry.service import RegistryService

ERRORS = frozenset({ExecutionStatus.FAILED, ExecutionStatus.TERMINATED, ExecutionStatus.TIMED_OUT})
# At most this many points in `latency_over_time`: executions are averaged per time bucket, the
# bucket as narrow as that allows (one second at least).
MAX_POINTS = 500


def latency_series(spans: list[tuple[datetime, datetime]]) -> list[list[int | float]]:
    """`[bucket start (Unix seconds), mean duration (ms)]` by start time, oldest first."""
    if not spans:
        return []
    first = int(as_utc(spans[0][0]).timestamp())
    last = int(as_utc(spans[-1][0]).timestamp())
    width = max(1, math.ceil((last - first + 1) / MAX_POINTS))
    buckets: dict[int, list[float]] = {}
    for start, end in spans:
        at = int(as_utc(start).timestamp())
        key = first + (at - first) // width * width
        buckets.setdefault(key, []).append(duration_ms(start, end))
    return [[key, round(sum(v) / len(v), 3)] for key, v in sorted(buckets.items())]


def duration_ms(start: datetime, end: datetime) -> float:
    return max(0.0, (as_utc(end) - as_utc(start)).total_seconds() * 1000)


class MetricsService:
    def __init__(self, registry: RegistryService) -> None:
        self.registry = registry
        self.repo = MetricsRepository(registry.repo.session, registry.repo.tenant)

    async def workflow_metrics(
        self, identifier: str, after: datetime | None, before: datetime | None
    ) -> WorkflowMetrics:
        """The metrics of a workflow (by name or id) over the executions started between
        `after` and `before` (both optional); an unknown workflow is a 404."""
        workflow = await self.registry.workflow(identifier)
        counts = await self.repo.status_counts(workflow.name, after, before)
        spans = await self.repo.closed_spans(workflow.name, after, before)
        durations = [duration_ms(start, end) for start, end in spans]
        average = round(sum(durations) / len(durations), 3) if durations else 0
        return WorkflowMetrics(
            execution_count=ScalarMetric(value=sum(counts.values())),
            success_count=ScalarMetric(value=counts.get(ExecutionStatus.COMPLETED, 0)),
            error_count=ScalarMetric(value=sum(n for s, n in counts.items() if s in ERRORS)),
            average_latency_ms=ScalarMetric(value=average),
            latency_over_time=TimeSeriesMetric(value=latency_series(spans)),
            retry_rate=ScalarMetric(value=-1),
        )
