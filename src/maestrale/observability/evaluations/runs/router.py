"""Evaluation runs v2 (mistralai 3.x `beta.observability.evaluations.runs` and `.records`), with
the start-a-run and delete extensions the SDK lacks."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body, Depends, Query, Response

from maestrale.core.auth.dependencies import CurrentTenant, StandardAuth
from maestrale.core.clock import utcnow
from maestrale.core.dependencies import Db
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work
from maestrale.observability.errors import observability_router
from maestrale.observability.evaluations.runs.filters import RecordFilter, RunFilter
from maestrale.observability.evaluations.runs.repository import RunRepository
from maestrale.observability.evaluations.runs.schemas import (
    ListRecords,
    ListRuns,
    RecordOut,
    RecordPage,
    RunCreate,
    RunOut,
    RunPage,
    RunRefsPage,
    RunStatisticsOut,
    SearchAllRuns,
)
from maestrale.observability.evaluations.runs.service import RunService

router = observability_router(prefix="/observability", tags=["observability"])


def run_service(work: Work, tenant: CurrentTenant, db: Db) -> RunService:
    return RunService(RunRepository(work.session, tenant), JobQueue(db))


Runs = Annotated[RunService, Depends(run_service)]
IntQuery = Annotated[int, Query()]
RunFilterBody = Annotated[RunFilter | None, Body()]
RecordFilterBody = Annotated[RecordFilter | None, Body()]


def _page(page: int, page_size: int) -> PageParams:
    return PageParams(page, page_size, first_page=1)


@router.post("/evaluations_v2/{evaluation_slug}/runs", status_code=201)
async def start_run(
    evaluation_slug: str, body: RunCreate, runs: Runs, principal: StandardAuth
) -> RunOut:
    """Start a run of an evaluation (extension): each live record of the dataset (its messages
    and properties) becomes an input that every evaluator scores, in a background job. The run
    is `running`, then `completed`; follow it with a get or its statistics."""
    return await runs.out(await runs.start(evaluation_slug, body, principal))


@router.post("/evaluations_v2/{evaluation_slug}/runs/search")
async def search_evaluation_runs(
    evaluation_slug: str,
    runs: Runs,
    body: RunFilterBody = None,
    page_size: IntQuery = 50,
    page: IntQuery = 1,
) -> ListRuns:
    """The runs of one evaluation that match the filters, newest first."""
    rows, count, nxt, prev = await runs.search(
        body or RunFilter(), _page(page, page_size), evaluation_slug
    )
    results = [await runs.out(r) for r in rows]
    return ListRuns(runs=RunPage(count=count, results=results, next=nxt, previous=prev))


@router.post("/evaluation-runs_v2/search")
async def search_runs(
    runs: Runs, body: RunFilterBody = None, page_size: IntQuery = 50, page: IntQuery = 1
) -> SearchAllRuns:
    """The workspace's runs that match the filters, newest first, each with its evaluation and
    project. Goal and system filters are refused (400)."""
    rows, count, nxt, prev = await runs.search(body or RunFilter(), _page(page, page_size))
    results = await runs.outs_with_refs(rows)
    return SearchAllRuns(runs=RunRefsPage(count=count, results=results, next=nxt, previous=prev))


@router.get("/evaluation-runs_v2/{run_id}")
async def get_run(run_id: str, runs: Runs) -> RunOut:
    """One run, with its evaluators and their statistics so far."""
    return await runs.out(await runs.get(run_id))


@router.delete("/evaluation-runs_v2/{run_id}", status_code=204)
async def delete_run(run_id: str, runs: Runs) -> Response:
    """Delete a run (extension); its job stops before the next record."""
    run = await runs.get(run_id)
    run.deleted_at = run.updated_at = utcnow()
    await runs.repo.flush()
    return Response(status_code=204)


@router.get("/evaluation-runs_v2/{run_id}/statistics")
async def run_statistics(run_id: str, runs: Runs) -> RunStatisticsOut:
    """Each evaluator's statistics over the run's scores: numeric (count, avg, min, max, std)
    or categorical (frequencies, mode). Goals are not served."""
    return await runs.statistics(run_id)


@router.post("/evaluation-runs_v2/{run_id}/statistics/compute")
async def compute_run_statistics(
    run_id: str, runs: Runs, body: RecordFilterBody = None
) -> RunStatisticsOut:
    """The statistics over the run's records that the score filters keep."""
    return await runs.statistics(run_id, body or RecordFilter())


@router.get("/evaluation-runs_v2/{run_id}/records/{record_id}")
async def get_record(run_id: str, record_id: str, runs: Runs) -> RecordOut:
    """One record of a run: its input and, once scored, each evaluator's score."""
    return await runs.record(run_id, record_id)


@router.post("/evaluation-runs_v2/{run_id}/records/search")
async def search_records(
    run_id: str,
    runs: Runs,
    body: RecordFilterBody = None,
    page_size: IntQuery = 50,
    page: IntQuery = 1,
) -> ListRecords:
    """The run's records that the score filters keep, in run order unless `sort` says
    otherwise (by creation or by an evaluator's score). Content and goal filters are refused."""
    rows, count, nxt, prev = await runs.records(
        run_id, body or RecordFilter(), _page(page, page_size)
    )
    return ListRecords(records=RecordPage(count=count, results=rows, next=nxt, previous=prev))
