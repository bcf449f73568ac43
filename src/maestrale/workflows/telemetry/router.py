"""Logs and traces of workflow executions, and logs of deployments, from the telemetry store (what
the official worker exports over OTLP to `/telemetry/v1/{traces,logs}`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Depends, Path, Query, Request
from fastapi.responses import StreamingResponse

from maestrale.config.dependencies import AppSettings
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.core.dependencies import Db
from maestrale.core.routing import Work
from maestrale.core.sse import sse_response, streamed
from maestrale.workflows.dependencies import execution_service
from maestrale.workflows.errors import not_found
from maestrale.workflows.executions.schemas import ExecutionOut
from maestrale.workflows.routing import workflows_router
from maestrale.workflows.telemetry.logs import to_ns
from maestrale.workflows.telemetry.otlp import tempo_trace
from maestrale.workflows.telemetry.params import LogQuery, StreamStart, log_query, stream_start
from maestrale.workflows.telemetry.repository import LogScope
from maestrale.workflows.telemetry.schemas import (
    LogRecordOut,
    LogSearchOut,
    TraceEventsOut,
    TraceInfoOut,
    TraceOtelOut,
    TraceSummaryOut,
)
from maestrale.workflows.telemetry.service import WorkflowTelemetryService
from maestrale.workflows.telemetry.streaming import LogStream, LogStreamSpec
from maestrale.workflows.telemetry.traces import execution_events, root_span, span_tree

router = workflows_router(prefix="/workflows", tags=["workflows telemetry"])

DATA_SOURCE = "maestrale"
ExecutionId = Annotated[str, Path(max_length=256)]
Name = Annotated[str | None, Query(max_length=256)]
RunId = Annotated[str | None, Query(max_length=64)]
_SSE: dict[int | str, dict[str, Any]] = {
    200: streamed(LogRecordOut, "Server-sent events: `event: log`, `id`, `data: <log record>`")
}


async def telemetry_service(work: Work, principal: StandardAuth) -> WorkflowTelemetryService:
    return WorkflowTelemetryService(work.session, Tenant.of(principal))


Telemetry = Annotated[WorkflowTelemetryService, Depends(telemetry_service)]


async def execution_header(
    execution_id: ExecutionId,
    request: Request,
    work: Work,
    principal: StandardAuth,
    settings: AppSettings,
    db: Db,
) -> ExecutionOut:
    """The execution as `GET /executions/{id}` answers it (its state refreshed from Temporal);
    from the index alone where workflows run on no Temporal here (the routes still serve the
    telemetry stored)."""
    if app_services(request).workflows is None:
        tenant = Tenant.of(principal)
        return ExecutionOut.of(
            await WorkflowTelemetryService(work.session, tenant).execution(execution_id)
        )
    return await (await execution_service(request, work, principal, settings, db)).get(execution_id)


Header_ = Annotated[ExecutionOut, Depends(execution_header)]


Page = Annotated[LogQuery, Depends(log_query)]
Start = Annotated[StreamStart, Depends(stream_start)]


def _stream(
    request: Request,
    db: Db,
    tenant: Tenant,
    scope: LogScope,
    start: StreamStart,
    watch: str | None,
) -> StreamingResponse:
    resume, after = start.resume(), start.after
    spec = LogStreamSpec(
        tenant=tenant,
        scope=scope,
        after_id=resume or 0,
        from_ns=None if resume is not None or after is None else to_ns(after),
        watch=watch,
    )
    engine = app_services(request).workflows
    engine = None if engine is None or watch is None else engine.for_workspace(tenant.workspace_id)
    return sse_response(LogStream(spec, db.sessionmaker, engine).frames())


@router.get("/executions/{execution_id}/logs", response_model=LogSearchOut)
async def get_workflow_execution_logs(
    execution_id: ExecutionId,
    service: Telemetry,
    page: Page,
    run_id: RunId = None,
    activity_id: Name = None,
) -> LogSearchOut:
    """The log records the execution's workers sent (of one run, of one activity), by time:
    `after`/`before`/`order` set the first page, whose `next_cursor` carries them on."""
    scope = await service.execution_logs(execution_id, run_id, activity_id)
    return await service.page(scope, page.page(), page.limit)


@router.get(
    "/executions/{execution_id}/logs/stream", response_class=StreamingResponse, responses=_SSE
)
async def stream_workflow_execution_logs(
    execution_id: ExecutionId,
    request: Request,
    service: Telemetry,
    db: Db,
    start: Start,
    run_id: RunId = None,
    activity_id: Name = None,
) -> StreamingResponse:
    """The execution's log records so far, then those that arrive, in arrival order; resumes
    after `Last-Event-ID` (or `last_event_id`), else starts at `after`, else at the start. Ends
    once the execution has ended and its late records had time to arrive."""
    scope = await service.execution_logs(execution_id, run_id, activity_id)
    return _stream(request, db, service.tenant, scope, start, execution_id)


@router.get("/deployments/{name}/logs", response_model=LogSearchOut)
async def get_deployment_logs(
    name: Annotated[str, Path(max_length=200)],
    service: Telemetry,
    page: Page,
    log_type: Literal["runtime", "build"] | None = None,
    worker_name: Name = None,
    workflow_name: Name = None,
) -> LogSearchOut:
    """The log records of the deployment's workers (of one worker, of one workflow's runs),
    paged as an execution's. Deployments here are self-hosted: no build pipeline runs, so
    `log_type=build` answers 404 for a known deployment."""
    scope = await service.deployment_logs(name, worker_name, workflow_name)
    if log_type == "build":
        raise not_found(f"build logs of deployment {name!r} (a self-hosted deployment)")
    return await service.page(scope, page.page(), page.limit)


@router.get("/deployments/{name}/logs/stream", response_class=StreamingResponse, responses=_SSE)
async def stream_deployment_logs(
    name: Annotated[str, Path(max_length=200)],
    request: Request,
    service: Telemetry,
    db: Db,
    start: Start,
    worker_name: Name = None,
    workflow_name: Name = None,
) -> StreamingResponse:
    """The deployment's log records so far, then those that arrive (up to 30 minutes a
    connection: resume with the last id)."""
    scope = await service.deployment_logs(name, worker_name, workflow_name)
    return _stream(request, db, service.tenant, scope, start, None)


@router.get("/executions/{execution_id}/trace/info", response_model=TraceInfoOut)
async def get_workflow_execution_trace_info(
    execution_id: ExecutionId, service: Telemetry
) -> TraceInfoOut:
    """The OpenTelemetry trace of the execution, once its worker has sent a span of it."""
    row = await service.execution(execution_id)
    trace_id = await service.trace_id(row.id, row.start_time)
    return TraceInfoOut(otel_trace_id=trace_id, has_trace_data=trace_id is not None)


@router.get("/executions/{execution_id}/trace/otel", response_model=TraceOtelOut)
async def get_workflow_execution_trace_otel(execution: Header_, service: Telemetry) -> TraceOtelOut:
    """The execution and its whole trace as OTLP JSON (`otel_trace_data.batches`: OTLP
    `ResourceSpans`); null before a span of it came."""
    trace_id, spans = await service.trace(execution.execution_id, execution.start_time)
    return TraceOtelOut(
        **execution.model_dump(),
        data_source=DATA_SOURCE,
        otel_trace_id=trace_id,
        otel_trace_data=tempo_trace(spans) if spans else None,
    )


@router.get("/executions/{execution_id}/trace/summary", response_model=TraceSummaryOut)
async def get_workflow_execution_trace_summary(
    execution: Header_, service: Telemetry
) -> TraceSummaryOut:
    """The execution and the tree of its spans from its root span, each with its events."""
    _, spans = await service.trace(execution.execution_id, execution.start_time)
    root = root_span(spans, execution.execution_id)
    tree = None if root is None else span_tree(spans, root)
    return TraceSummaryOut(**execution.model_dump(), span_tree=tree)


@router.get("/executions/{execution_id}/trace/events", response_model=TraceEventsOut)
async def get_workflow_execution_trace_events(
    execution: Header_,
    service: Telemetry,
    merge_same_id_events: bool = False,
    include_internal_events: bool = False,
) -> TraceEventsOut:
    """The events the execution's worker recorded (custom events, task progress) by time;
    `merge_same_id_events` keeps one per id (a task's latest progress)."""
    _, spans = await service.trace(execution.execution_id, execution.start_time)
    root = root_span(spans, execution.execution_id)
    events = (
        []
        if root is None
        else execution_events(
            spans, root, merge=merge_same_id_events, internal=include_internal_events
        )
    )
    return TraceEventsOut(**execution.model_dump(), events=events)
