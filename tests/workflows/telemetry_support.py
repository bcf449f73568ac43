"""Rows of workflow telemetry written straight into a database, as the official worker's exports
would land there: an indexed execution, its log records and its spans (the attributes the worker
sets, see maestrale.workflows.telemetry.links)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from maestrale.core.auth.principal import Tenant
from maestrale.core.db import Database
from maestrale.core.uow import unit_of_work
from maestrale.telemetry.otlp.genai import log_columns
from maestrale.telemetry.tables import TelemetryLog, TelemetrySpan
from maestrale.workflows.executions.tables import Execution

STARTED = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
T0 = int(STARTED.timestamp()) * 10**9
WORKER = {"service.name": "mistral-workflows-worker", "worker_id": 4242}


def execution(tenant: Tenant, execution_id: str, *, status: str = "RUNNING") -> Execution:
    ended = status != "RUNNING"
    return Execution(
        id=execution_id,
        organization_id=tenant.organization_id,
        workspace_id=tenant.workspace_id,
        workflow_name="echo",
        deployment_name="dep",
        run_id="run-1",
        status=status,
        start_time=STARTED,
        end_time=STARTED + timedelta(seconds=2) if ended else None,
        result={"ok": True} if ended else None,
        root_execution_id=execution_id,
    )


def log(
    tenant: Tenant, execution_id: str, offset_ms: int, body: str, **attributes: Any
) -> TelemetryLog:
    attributes = {
        "workflowExecutionID": execution_id,
        "workflowRunID": "run-1",
        "workflowName": "echo",
        "deploymentName": "dep",
        "workerName": "w1",
        **attributes,
    }
    return TelemetryLog(
        organization_id=tenant.organization_id,
        workspace_id=tenant.workspace_id,
        timestamp_ns=T0 + offset_ms * 10**6,
        trace_id="ab" * 16,
        span_id="cd" * 8,
        severity_text="INFO",
        severity_number=9,
        service_name="mistral-workflows-worker",
        body=body,
        resource_attributes=WORKER,
        attributes=attributes,
        **log_columns(attributes),  # as ingestion fills them
    )


def span(
    tenant: Tenant,
    execution_id: str,
    span_id: str,
    parent: str,
    name: str,
    offset_ms: int,
    *,
    trace_id: str = "ab" * 16,
    events: list[dict[str, Any]] | None = None,
    attributes: dict[str, Any] | None = None,
) -> TelemetrySpan:
    start = T0 + offset_ms * 10**6
    return TelemetrySpan(
        organization_id=tenant.organization_id,
        workspace_id=tenant.workspace_id,
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        start_ns=start,
        end_ns=start + 10**8,
        duration_ns=10**8,
        name=name,
        kind="SPAN_KIND_INTERNAL",
        service_name="mistral-workflows-worker",
        status_code="Error" if name.startswith("Fail") else "Unset",
        execution_id=execution_id,
        attributes={
            "wf.workflow.execution_id": execution_id,
            "temporalRunID": "run-1",
            **(attributes or {}),
        },
        resource_attributes=WORKER,
        scope_name="mistralai.workflows",
        events=events or [],
    )


def progress(task: str, status: str, offset_ms: int, **extra: Any) -> dict[str, Any]:
    """A span event of a task's progress, as the worker records it."""
    return {
        "time_ns": T0 + offset_ms * 10**6,
        "name": task,
        "attributes": {
            "wf.type": "EVENT_PROGRESS",
            "wf.id": f"task-{task}",
            "wf.internal": False,
            "wf.progress.status": status,
            "wf.progress.start_time_unix_ms": T0 // 10**6 + offset_ms,
            **extra,
        },
    }


def new_id() -> str:
    return f"ex-{uuid.uuid4().hex[:12]}"


async def store(database: Database, *rows: Any) -> None:
    async with unit_of_work(database.sessionmaker) as work:
        work.session.add_all(rows)


async def store_at(database_url: str, *rows: Any) -> None:
    """Into a database that another process serves (a live server's)."""
    database = Database(database_url)
    try:
        await store(database, *rows)
    finally:
        await database.dispose()
