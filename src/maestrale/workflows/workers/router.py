"""The endpoints the official `mistralai-workflows` worker calls: whoami, register, heartbeat and
executions/register (events are in `workflows.events`)."""

from __future__ import annotations

import re

from fastapi import Request

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.workflows.dependencies import Workers, temporal_engine
from maestrale.workflows.errors import engine_failed
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

# A public address without a port: a name, an IPv4 address, or a bracketed IPv6 one.
_HOST_ONLY = re.compile(r"[^:\[\]]+|\[[^\]]*\]")


@router.get("/workers/whoami", response_model=WorkerInfo)
async def whoami(request: Request, principal: StandardAuth, settings: AppSettings) -> WorkerInfo:
    """Where a worker finds the engine: the address of Maestrale's worker proxy (never Temporal's
    own), which admits the key to its workspace's namespace only; that namespace (made on first
    use), and the features the worker should use (v1 events, no graph upload).
    `MAESTRALE_TEMPORAL_PUBLIC_ADDRESS` names the proxy as workers reach it, when that is not the
    host they reach the API at (a host alone: with the port the proxy listens on)."""
    engine = temporal_engine(request)
    port = engine.proxy_port
    if port is None:
        why = engine.proxy_failure or "the worker proxy is not listening"
        raise engine_failed(
            f"workers cannot reach Temporal: {why}; see the server log", status_code=503
        )
    workspace = engine.for_workspace(Tenant.of(principal).workspace_id)
    await workspace.connection.namespace_id(workspace.namespace)
    address = settings.temporal_public_address
    if not address:
        host = settings.temporal_proxy_host or settings.host
        if host in ("0.0.0.0", "::", ""):  # every interface: the one this request came in on
            host = request.url.hostname or "127.0.0.1"
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    elif _HOST_ONLY.fullmatch(address):
        address = f"{address}:{port}"
    return WorkerInfo(scheduler_url=address, namespace=workspace.namespace, tls=False)


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
