"""The workflows services a handler is given: built from the request's unit of work, the caller's
workspace and the process's Temporal engine (a view of it that ends the request's transaction
before each call to Temporal)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

from maestrale.config import Settings
from maestrale.config.dependencies import AppSettings
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.core.db import Database
from maestrale.core.dependencies import Db
from maestrale.core.routing import Work
from maestrale.core.uow import UnitOfWork
from maestrale.workflows.errors import engine_failed
from maestrale.workflows.executions.service import ExecutionService, ExecutionSettings
from maestrale.workflows.registry.service import RegistryService
from maestrale.workflows.temporal.devserver import DISABLED
from maestrale.workflows.temporal.engine import TemporalEngine
from maestrale.workflows.workers.service import WorkerService

if TYPE_CHECKING:
    from maestrale.workflows.schedules.service import ScheduleService


def temporal_engine(request: Request) -> TemporalEngine:
    """The process's engine; 503 saying why workflows are off (disabled by the settings, or
    the embedded Temporal failed to start, and why)."""
    services = app_services(request)
    engine: TemporalEngine | None = services.workflows
    if engine is None:
        why: str | None = services.workflows_off
        raise engine_failed(f"workflows are off: {why or DISABLED}", status_code=503)
    return engine


async def registry_service(
    work: Work, principal: StandardAuth, settings: AppSettings
) -> RegistryService:
    return RegistryService.of(
        work.session, Tenant.of(principal), settings.workflow_worker_liveness_seconds
    )


async def worker_service(
    work: Work, principal: StandardAuth, settings: AppSettings
) -> WorkerService:
    return WorkerService(work, Tenant.of(principal), settings.workflow_worker_liveness_seconds)


def workspace_engine(request: Request, tenant: Tenant) -> TemporalEngine:
    """The engine bound to the caller's workspace: its namespace only."""
    return temporal_engine(request).for_workspace(tenant.workspace_id)


def request_engine(
    request: Request, tenant: Tenant, work: UnitOfWork, db: Database
) -> TemporalEngine:
    """The workspace's engine, ending the request's transaction before each call to Temporal."""
    return workspace_engine(request, tenant).releasing(work.release, db)


def execution_settings(settings: Settings, engine: TemporalEngine) -> ExecutionSettings:
    return ExecutionSettings(
        namespace=engine.namespace,
        wait_seconds=settings.workflow_wait_seconds,
        max_wait_seconds=settings.workflow_max_wait_seconds,
        liveness_seconds=settings.workflow_worker_liveness_seconds,
    )


async def execution_service(
    request: Request, work: Work, principal: StandardAuth, settings: AppSettings, db: Db
) -> ExecutionService:
    tenant = Tenant.of(principal)
    engine = request_engine(request, tenant, work, db)
    return ExecutionService(
        work, tenant, engine, execution_settings(settings, engine), user_id=principal.user_id
    )


async def schedule_service(
    request: Request, work: Work, principal: StandardAuth, settings: AppSettings, db: Db
) -> ScheduleService:
    # Imported here: schedules build `temporalio` objects, and the app must import without the
    # [workflows] extra (the routes then answer 503).
    from maestrale.workflows.schedules.service import ScheduleService

    tenant = Tenant.of(principal)
    engine = request_engine(request, tenant, work, db)
    return ScheduleService(
        work, tenant, engine, execution_settings(settings, engine), user_id=principal.user_id
    )


Registry = Annotated[RegistryService, Depends(registry_service)]
Workers = Annotated[WorkerService, Depends(worker_service)]
Executions = Annotated[ExecutionService, Depends(execution_service)]
Schedules = Annotated["ScheduleService", Depends(schedule_service)]
