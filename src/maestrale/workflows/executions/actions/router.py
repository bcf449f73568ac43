"""Acting on executions: cancel, terminate, reset (204, as the SDK requires: a 200 makes it
raise), batch cancel and terminate, signals (202), queries, updates and the event history.

The batch routes (`/executions/cancel`, `/executions/terminate`) and the per-execution ones
(`/executions/{execution_id}/cancel`, ...) differ in depth, so neither shadows the other.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import orjson
from fastapi import Depends, Response

from maestrale.core.responses import json_bytes
from maestrale.workflows.dependencies import Executions
from maestrale.workflows.errors import WorkflowErrorOut
from maestrale.workflows.executions.actions.schemas import (
    BatchOut,
    BatchRequest,
    HandlerCall,
    QueryOut,
    ResetRequest,
    SignalOut,
    TerminateRequest,
    UpdateOut,
)
from maestrale.workflows.executions.actions.service import ExecutionActions
from maestrale.workflows.routing import workflows_router


async def execution_actions(service: Executions) -> ExecutionActions:
    return ExecutionActions(service)


Actions = Annotated[ExecutionActions, Depends(execution_actions)]

router = workflows_router(prefix="/workflows/executions", tags=["workflows executions"])

Responses = dict[int | str, dict[str, Any]]
_CONFLICT: Responses = {
    409: {"model": WorkflowErrorOut, "description": "The execution is not running (`WF_1102`)"}
}
_TIMEOUT: Responses = {
    504: {"model": WorkflowErrorOut, "description": "No worker answered in time (`WF_1103`)"}
}


@router.post("/cancel", response_model=BatchOut)
async def batch_cancel_workflow_executions(body: BatchRequest, actions: Actions) -> BatchOut:
    """Ask up to 100 executions to cancel. Each id gets its own result: `success`, or
    `failure` with why (not found, of another workspace, already closed); one failure never
    fails the call."""
    return await actions.batch(body.execution_ids, "cancel")


@router.post("/terminate", response_model=BatchOut)
async def batch_terminate_workflow_executions(body: BatchRequest, actions: Actions) -> BatchOut:
    """Terminate up to 100 executions, each with its own `success` or `failure` result."""
    return await actions.batch(body.execution_ids, "terminate")


@router.post(
    "/{execution_id}/cancel", status_code=204, response_class=Response, responses=_CONFLICT
)
async def cancel_workflow_execution(execution_id: str, actions: Actions) -> Response:
    """Ask the execution to cancel: the workflow is told and usually ends CANCELED (it may
    clean up first). An execution that has already closed: 409 `WF_1102`."""
    await actions.cancel(execution_id)
    return Response(status_code=204)


@router.post(
    "/{execution_id}/terminate", status_code=204, response_class=Response, responses=_CONFLICT
)
async def terminate_workflow_execution(
    execution_id: str, actions: Actions, body: TerminateRequest | None = None
) -> Response:
    """End the execution at once (TERMINATED), running none of its code; an optional
    `reason` is kept in its history. Already closed: 409 `WF_1102`."""
    await actions.terminate(execution_id, body.reason if body else None)
    return Response(status_code=204)


@router.post("/{execution_id}/reset", status_code=204, response_class=Response)
async def reset_workflow(execution_id: str, body: ResetRequest, actions: Actions) -> Response:
    """Reset the execution's latest run to a workflow task event of its history (`event_id`):
    a new run of the same execution replays up to that point and goes on from there, with the
    signals and updates received after it unless excluded. An event that is not a workflow
    task's end: 400."""
    await actions.reset(execution_id, body)
    return Response(status_code=204)


@router.post(
    "/{execution_id}/signals", status_code=202, response_model=SignalOut, responses=_CONFLICT
)
async def signal_workflow_execution(
    execution_id: str, body: HandlerCall, actions: Actions
) -> SignalOut:
    """Send a signal (`name`, `input`) to the running execution. A signal the workflow's
    registration does not declare: 400; a closed execution: 409 `WF_1102`."""
    await actions.signal(execution_id, body)
    return SignalOut()


@router.post(
    "/{execution_id}/queries",
    response_model=QueryOut,
    responses={**_CONFLICT, **_TIMEOUT},
)
async def query_workflow_execution(
    execution_id: str, body: HandlerCall, actions: Actions
) -> QueryOut:
    """Ask the execution a query (`name`, `input`) and return its answer; a worker of its
    deployment must be running. A query the workflow does not have, or that fails: 400."""
    return await actions.query(execution_id, body)


@router.post(
    "/{execution_id}/updates",
    response_model=UpdateOut,
    responses={**_CONFLICT, **_TIMEOUT},
)
async def update_workflow_execution(
    execution_id: str, body: HandlerCall, actions: Actions
) -> UpdateOut:
    """Run an update (`name`, `input`) on the running execution and return its result. An
    update the workflow does not have or refuses: 400; a closed execution: 409 `WF_1102`."""
    return await actions.update(execution_id, body)


def history_response(document: dict[str, Any]) -> Response:
    """A history as JSON, encoded at once (histories run to thousands of events): orjson, or
    the standard encoder for a decoded value orjson refuses (an integer past 64 bits)."""
    try:
        return json_bytes(orjson.dumps(document))
    except TypeError:
        return json_bytes(json.dumps(document).encode())


HISTORY_RESPONSES: Responses = {
    200: {"content": {"application/json": {"schema": {}}}, "description": "Temporal's history"}
}


@router.get("/{execution_id}/history", response_class=Response, responses=HISTORY_RESPONSES)
async def get_workflow_execution_history(
    execution_id: str, actions: Actions, decode_payloads: bool = True
) -> Response:
    """The event history of the execution's latest run, as Temporal's JSON
    (`{"events": [...]}`). With `decode_payloads` (the default), every payload in it (inputs,
    results, signal arguments) is replaced by its decoded JSON value."""
    return history_response(await actions.history(execution_id, decode_payloads))
