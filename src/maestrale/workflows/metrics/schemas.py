"""Wire models of a workflow's metrics (`WorkflowMetrics`, the same in 2.x and 3.x)."""

from __future__ import annotations

from pydantic import BaseModel


class ScalarMetric(BaseModel):
    value: int | float


class TimeSeriesMetric(BaseModel):
    """`[timestamp, value]` pairs: a Unix time in seconds and a number."""

    value: list[list[int | float]]


class WorkflowMetrics(BaseModel):
    execution_count: ScalarMetric
    success_count: ScalarMetric
    error_count: ScalarMetric
    average_latency_ms: ScalarMetric
    latency_over_time: TimeSeriesMetric
    # Deprecated by the platform, always -1: retries are not measured (see error_count).
    retry_rate: ScalarMetric
