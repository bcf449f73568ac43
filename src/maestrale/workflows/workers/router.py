"""The endpoints the official `mistralai-workflows` worker calls: whoami, register, heartbeat and
executions/register (events are in `workflows.events`)."""

from __future__ import annotations

from fastapi import Request

from maestrale.core.auth.dependencies import StandardAuth
from maestrale.dependencies import app_services
from maestrale.workflows.dependencies import Workers, temporal_engine
from maestrale.workflows.routing import workflows_router
from maestrale.workflows.workers.schemas import (
    ExecutionRegisterRequest,
    ExecutionRegisterResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    RegisterRequest,
    RegisterResponse,
    WorkerInfo,
)

router = workflows_router(prefix="/workflows", tags=["workflows workers"])


@router.get("/workers/whoami", response_model=WorkerInfo)
async def whoami(request: Request, principal: StandardAuth) -> WorkerInfo:
    """Where a worker finds the engine: the Temporal frontend address, namespace and TLS flag
    (`MAESTRALE_TEMPORAL_PUBLIC_ADDRESS` when workers reach it by another address than the
    server does), and the features the worker should use (v1 events, no graph upload)."""
    settings = app_services(request).settings
    engine = temporal_engine(request)
    return WorkerInfo(
        scheduler_url=settings.temporal_public_address or engine.target.address,
        namespace=engine.target.namespace,
        tls=engine.target.tls,
    )


@router.post("/register", response_model=RegisterResponse)
async def register_workflows(body: RegisterRequest, service: Workers) -> RegisterResponse:
    """A worker's workflows, registered for its deployment (idempotent: the same definitions
    give the same registrations). A workflow another live deployment also serves is registered
    with a warning: its executions must then name their deployment."""
    return await service.register(body)


@router.post("/workers/heartbeat", response_model=HeartbeatResponse)
async def heartbeat(body: HeartbeatRequest, service: Workers) -> HeartbeatResponse:
    """A worker is alive (every 10 s). An unknown registration answers 409, which makes the
    worker register again."""
    return await service.heartbeat(body)


@router.post("/executions/register", response_model=ExecutionRegisterResponse)
async def register_execution(
    body: ExecutionRegisterRequest, service: Workers
) -> ExecutionRegisterResponse:
    """A run has started on a worker: tie it to the execution index (the first activity of every
    run of the official worker)."""
    return await service.register_execution(body)
