"""The workflows group, in matching order: every fixed `/workflows/...` path before
`/workflows/{workflow_identifier}`. Execute comes first: no fixed path has its shape
(`/workflows/<one segment>/execute`), and the hottest route is matched soonest."""

from __future__ import annotations

from fastapi import APIRouter

from maestrale.workflows.events.router import router as events_router
from maestrale.workflows.executions.control_router import router as control_router
from maestrale.workflows.executions.router import execute_router
from maestrale.workflows.executions.router import router as executions_router
from maestrale.workflows.registry.router import router as registry_router
from maestrale.workflows.registry.router import workflow_router
from maestrale.workflows.runs.router import router as runs_router
from maestrale.workflows.schedules.router import router as schedules_router
from maestrale.workflows.workers.router import router as workers_router

router = APIRouter()
for sub in (
    execute_router,
    workers_router,
    events_router,
    schedules_router,
    executions_router,
    control_router,
    runs_router,
    registry_router,
    workflow_router,
):
    router.include_router(sub)
