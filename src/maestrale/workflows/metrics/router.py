"""A workflow's metrics, from the execution index."""

from __future__ import annotations

from datetime import datetime

from maestrale.core.clock import as_utc
from maestrale.core.errors import BadRequest
from maestrale.workflows.dependencies import Registry
from maestrale.workflows.metrics.schemas import WorkflowMetrics
from maestrale.workflows.metrics.service import MetricsService
from maestrale.workflows.routing import workflows_router

router = workflows_router(prefix="/workflows", tags=["workflows metrics"])


@router.get("/{workflow_name}/metrics", response_model=WorkflowMetrics)
async def get_workflow_metrics(
    workflow_name: str,
    service: Registry,
    start_time: datetime | None = None,
    end_time: datetime | None = None,
) -> WorkflowMetrics:
    """A workflow's executions started in the window (`start_time`, `end_time`, both optional,
    ISO 8601): how many, how many completed (`success_count`) and how many failed, were
    terminated or timed out (`error_count`), the mean duration of the closed ones and their
    durations over time (`[Unix seconds, ms]`, averaged per time bucket); `retry_rate` is
    always -1, as on the platform (retries are not measured)."""
    after = as_utc(start_time) if start_time is not None else None
    before = as_utc(end_time) if end_time is not None else None
    if after is not None and before is not None and before < after:
        raise BadRequest("end_time is before start_time", param="end_time")
    return await MetricsService(service).workflow_metrics(workflow_name, after, before)
