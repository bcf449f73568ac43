"""Rows of the telemetry store written directly (no ingestion): spans, trace summaries, logs."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from maestrale.telemetry.tables import TelemetryLog, TelemetrySpan, TelemetryTrace

NS = 1_000_000_000
# 2026-01-01T00:00:00Z
BASE = 1_767_225_600 * NS
MINUTE = 60 * NS
HOUR = 3600 * NS


def trace_id(n: int) -> str:
    return f"{n:032x}"


def span_id(n: int) -> str:
    return f"{n:016x}"


def trace(tenant: Tenant, n: int, start: int, duration: int = NS, **values: Any) -> TelemetryTrace:
    return TelemetryTrace(
        organization_id=tenant.organization_id,
        workspace_id=tenant.workspace_id,
        trace_id=trace_id(n),
        start_ns=start,
        end_ns=start + duration,
        duration_ns=duration,
        **{"service_name": "svc", "root_span_id": span_id(n), **values},
    )


def span(tenant: Tenant, t: int, s: int, start: int, duration: int, **values: Any) -> TelemetrySpan:
    return TelemetrySpan(
        organization_id=tenant.organization_id,
        workspace_id=tenant.workspace_id,
        trace_id=trace_id(t),
        span_id=span_id(s),
        start_ns=start,
        end_ns=start + duration,
        duration_ns=duration,
        **{"name": "chat", "kind": "SPAN_KIND_CLIENT", "service_name": "svc", **values},
    )


def log(tenant: Tenant, at: int, body: str, **values: Any) -> TelemetryLog:
    return TelemetryLog(
        organization_id=tenant.organization_id,
        workspace_id=tenant.workspace_id,
        timestamp_ns=at,
        body=body,
        **values,
    )


async def insert(app: FastAPI, *rows: Any) -> None:
    async with app.state.services.db.transaction() as work:
        work.session.add_all(rows)
