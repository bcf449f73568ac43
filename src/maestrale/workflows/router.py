"""The workflows group: the routes of its sub-domains, ordered by `routing.assemble` (a fixed
path before a parameter that would match it, such as `/workflows/runs` before
`/workflows/{workflow_identifier}`), whatever the order they are listed in here."""

from __future__ import annotations

from maestrale.workflows.events.router import router as events_router
from maestrale.workflows.executions.actions.router import router as actions_router
from maestrale.workflows.executions.router import router as executions_router
from maestrale.workflows.metrics.router import router as metrics_router
from maestrale.workflows.registry.router import router as registry_router
from maestrale.workflows.routing import assemble
from maestrale.workflows.runs.router import router as runs_router
from maestrale.workflows.schedules.router import router as schedules_router
from maestrale.workflows.telemetry.router import router as telemetry_router
from maestrale.workflows.workers.router import router as workers_router

SUB_ROUTERS = (
    actions_router,
    events_router,
    executions_router,
    metrics_router,
    registry_router,
    runs_router,
    schedules_router,
    telemetry_router,
    workers_router,
)

router = assemble(*SUB_ROUTERS)
