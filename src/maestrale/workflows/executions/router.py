"""Execute a workflow (by name or id, or by registration) and read an execution."""

from __future__ import annotations

from maestrale.workflows.dependencies import Executions
from maestrale.workflows.errors import not_found
from maestrale.workflows.executions.schemas import ExecutionOut, ExecutionRequest
from maestrale.workflows.routing import workflows_router

router = workflows_router(prefix="/workflows", tags=["workflows executions"])


@router.post("/registrations/{workflow_registration_id}/execute", response_model=ExecutionOut)
async def execute_workflow_registration(
    workflow_registration_id: str, body: ExecutionRequest, service: Executions
) -> ExecutionOut:
    """Start an execution on the deployment of a registration (deprecated by the platform in
    favour of executing by workflow)."""
    registration = await service.registry.registration(workflow_registration_id)
    if registration is None:
        raise not_found(f"workflow registration {workflow_registration_id!r}")
    reg, deployment = registration
    body = body.model_copy(update={"deployment_name": deployment.name, "task_queue": None})
    return await service.execute(reg.workflow_id, body)


@router.get("/executions/{execution_id}", response_model=ExecutionOut)
async def get_workflow_execution(
    execution_id: str, service: Executions, include_search_keys: bool = False
) -> ExecutionOut:
    """An execution: its status (Temporal's, refreshed), its result once it completed, and
    with `include_search_keys` its search attributes (`search_keys`)."""
    return await service.get(execution_id, include_search_keys)


@router.post("/{workflow_identifier}/execute", response_model=ExecutionOut)
async def execute_workflow(
    workflow_identifier: str, body: ExecutionRequest, service: Executions
) -> ExecutionOut:
    """Start an execution of a workflow (name or id) on Temporal, on the deployment given, else
    on the only one with live workers (several: 409 `AMBIGUOUS_WORKFLOW`). With
    `wait_for_result`, wait up to `timeout_seconds` for it to close: a timeout answers 200 with
    status RUNNING and never cancels it."""
    return await service.execute(workflow_identifier, body)
