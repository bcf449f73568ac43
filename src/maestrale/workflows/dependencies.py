"""The workflows services a handler is given: built from the request's unit of work, the caller's
workspace and the process's Temporal engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.core.routing import Work
from maestrale.dependencies import app_services
from maestrale.workflows.errors import engine_failed
from maestrale.workflows.executions.service import ExecutionService, ExecutionSettings
from maestrale.workflows.registry.service import RegistryService
from maestrale.workflows.temporal.engine import TemporalEngine
from maestrale.workflows.workers.service import WorkerService

if TYPE_CHECKING:
    from maestrale.workflows.schedules.service import ScheduleService


def temporal_engine(request: Request) -> TemporalEngine:
    engine = app_services(request).workflows
    if engine is None:
        raise engine_failed(
            "workflows are off: no Temporal address is configured and the embedded Temporal"
            " is disabled (MAESTRALE_TEMPORAL_EMBEDDED=false)",
            status_code=503,
        )
    return engine


async def registry_service(
    request: Request, work: Work, principal: StandardAuth
) -> RegistryService:
    settings = app_services(request).settings
    return RegistryService.of(
        work.session, Tenant.of(principal), settings.workflow_worker_liveness_seconds
    )


async def worker_service(request: Request, work: Work, principal: StandardAuth) -> WorkerService:
    settings = app_services(request).settings
    return WorkerService(work, Tenant.of(principal), settings.workflow_worker_liveness_seconds)


def workspace_engine(request: Request, tenant: Tenant) -> TemporalEngine:
    """The engine bound to the caller's workspace: its namespace only."""
    return temporal_engine(request).for_workspace(tenant.workspace_id)


def execution_settings(request: Request, engine: TemporalEngine) -> ExecutionSettings:
    settings = app_services(request).settings
    return ExecutionSettings(
        namespace=engine.namespace,
        wait_seconds=settings.workflow_wait_seconds,
        max_wait_seconds=settings.workflow_max_wait_seconds,
        liveness_seconds=settings.workflow_worker_liveness_seconds,
    )


async def execution_service(
    request: Request, work: Work, principal: StandardAuth
) -> ExecutionService:
    tenant = Tenant.of(principal)
    engine = workspace_engine(request, tenant)
    return ExecutionService(
        work, tenant, engine, execution_settings(request, engine), user_id=principal.user_id
    )


async def schedule_service(
    request: Request, work: Work, principal: StandardAuth
) -> ScheduleService:
    # Imported here: schedules build `temporalio` objects, and the app must import without the
    # [workflows] extra (the routes then answer 503).
    from maestrale.workflows.schedules.service import ScheduleService

    tenant = Tenant.of(principal)
    engine = workspace_engine(request, tenant)
    return ScheduleService(
        work, tenant, engine, execution_settings(request, engine), user_id=principal.user_id
    )


Registry = Annotated[RegistryService, Depends(registry_service)]
Workers = Annotated[WorkerService, Depends(worker_service)]
Executions = Annotated[ExecutionService, Depends(execution_service)]
Schedules = Annotated["ScheduleService", Depends(schedule_service)]
