"""Runs: list the workspace's executions, read one run by its id, and its history."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import Depends, Query, Response

from maestrale.core.clock import as_utc
from maestrale.core.pagination import MAX_PAGE_SIZE
from maestrale.workflows.dependencies import Executions
from maestrale.workflows.errors import WorkflowError
from maestrale.workflows.executions.actions.router import HISTORY_RESPONSES, history_response
from maestrale.workflows.executions.schemas import ExecutionOut
from maestrale.workflows.routing import workflows_router
from maestrale.workflows.runs.schemas import RunFilters, RunList, SortBy, StatusFilter
from maestrale.workflows.runs.service import RunService
from maestrale.workflows.temporal.control import INVALID


async def run_service(service: Executions) -> RunService:
    return RunService(service)


Runs = Annotated[RunService, Depends(run_service)]

router = workflows_router(prefix="/workflows/runs", tags=["workflows runs"])

Id = Annotated[str | None, Query(max_length=256)]


def _utc(value: datetime | None) -> datetime | None:
    return as_utc(value) if value is not None else None


@router.get("", response_model=RunList)
async def list_runs(
    runs: Runs,
    workflow_identifier: Id = None,
    root_execution_id: Id = None,
    search: Annotated[str | None, Query(max_length=256)] = None,
    status: Annotated[list[StatusFilter] | None, Query(max_length=8)] = None,
    deployment_name: Annotated[str | None, Query(max_length=200)] = None,
    sort_by: SortBy | None = None,
    order: Literal["asc", "desc"] = "desc",
    start_time_after: datetime | None = None,
    start_time_before: datetime | None = None,
    end_time_after: datetime | None = None,
    end_time_before: datetime | None = None,
    user_id: Annotated[str | None, Query(max_length=64)] = None,
    workflow_tags: Annotated[list[str] | None, Query(max_length=50)] = None,
    include_internal: bool = True,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 50,
    next_page_token: Annotated[str | None, Query(max_length=1024)] = None,
    search_key: Annotated[list[str] | None, Query(max_length=3)] = None,
) -> RunList:
    """The workspace's executions (their latest runs), newest first by start time (or by
    `sort_by`, `order`), filtered by workflow (name or id), root execution, a search in names
    and ids, statuses, deployment, time bounds (an end-time bound leaves out the runs still
    going), the user who started them (`current`: the caller), the workflow's tags (all of
    them) and whether internal workflows count. Pages of `page_size` (1 to 1000):
    `next_page_token`, when present, fetches the next one with the same filters. The running
    executions of a page show Temporal's current state.

    `search_key` filters on search attributes, which the index does not hold: 400."""
    if search_key:
        raise WorkflowError(
            "search_key filters are not supported by this server", INVALID, status_code=400
        )
    filters = RunFilters(
        workflow_identifier=workflow_identifier,
        root_execution_id=root_execution_id,
        search=search or None,
        statuses=tuple(sorted(set(status or ()))),
        deployment_name=deployment_name,
        start_time_after=_utc(start_time_after),
        start_time_before=_utc(start_time_before),
        end_time_after=_utc(end_time_after),
        end_time_before=_utc(end_time_before),
        user_id=user_id,
        workflow_tags=tuple(sorted(set(workflow_tags or ()))),
        include_internal=include_internal,
    )
    return await runs.list_runs(
        filters,
        sort_by=sort_by or "start_time",
        descending=order == "desc",
        page_size=page_size,
        token=next_page_token,
    )


@router.get("/{run_id}", response_model=ExecutionOut)
async def get_run(run_id: str, runs: Runs) -> ExecutionOut:
    """One run by its id: the latest run of an execution (as `GET /executions/{id}` shows
    it), or an earlier one (before a reset or a continue-as-new), with its own status, times
    and result."""
    return await runs.get(run_id)


@router.get("/{run_id}/history", response_class=Response, responses=HISTORY_RESPONSES)
async def get_run_history(run_id: str, runs: Runs, decode_payloads: bool = True) -> Response:
    """The event history of one run, as Temporal's JSON; with `decode_payloads` (the
    default), its payloads decoded."""
    return history_response(await runs.history(run_id, decode_payloads))
