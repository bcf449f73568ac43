"""Optimizations (mistralai 3.x `beta.observability.optimizations`: list, get, trials), with the
create and add-a-trial extensions the SDK lacks."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from maestrale.core.auth.dependencies import CurrentTenant, StandardAuth
from maestrale.core.dependencies import Db
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work
from maestrale.observability.errors import observability_router
from maestrale.observability.evaluations.optimizations.repository import OptimizationRepository
from maestrale.observability.evaluations.optimizations.schemas import (
    ListOptimizations,
    ListTrials,
    OptimizationCreate,
    OptimizationDetailOut,
    OptimizationPage,
    TrialCreate,
    TrialOut,
    TrialPage,
)
from maestrale.observability.evaluations.optimizations.service import OptimizationService
from maestrale.observability.evaluations.runs.repository import RunRepository
from maestrale.observability.evaluations.runs.service import RunService

router = observability_router(prefix="/observability", tags=["observability"])


def optimization_service(work: Work, tenant: CurrentTenant, db: Db) -> OptimizationService:
    runs = RunService(RunRepository(work.session, tenant), JobQueue(db))
    return OptimizationService(OptimizationRepository(work.session, tenant), runs)


Optimizations = Annotated[OptimizationService, Depends(optimization_service)]
IntQuery = Annotated[int, Query()]
TextQuery = Annotated[str | None, Query(max_length=200)]


@router.get("/optimizations")
async def list_optimizations(
    optimizations: Optimizations,
    project: TextQuery = None,
    evaluation: TextQuery = None,
    status: TextQuery = None,
    algorithm: TextQuery = None,
    tags: Annotated[list[str] | None, Query(max_length=100)] = None,
    page_size: IntQuery = 50,
    page: IntQuery = 1,
) -> ListOptimizations:
    """The workspace's optimizations, newest first; `project` and `evaluation` are ids or slugs,
    every one of `tags` must be present, `status` is `running` or `completed`."""
    rows, count, nxt, prev = await optimizations.list_optimizations(
        PageParams(page, page_size, first_page=1),
        project,
        evaluation,
        status,
        algorithm,
        tags or [],
    )
    return ListOptimizations(
        optimizations=OptimizationPage(count=count, results=rows, next=nxt, previous=prev)
    )


@router.post("/optimizations", status_code=201)
async def create_optimization(
    body: OptimizationCreate, optimizations: Optimizations, principal: StandardAuth
) -> OptimizationDetailOut:
    """Create an optimization of an evaluation (extension). Its trials are runs of the
    evaluation, added with `POST /optimizations/{id}/trials`, each observed by the objective:
    an evaluator's numeric statistic over the run; the outcome is the best trial."""
    return await optimizations.detail(await optimizations.create(body, principal))


@router.get("/optimizations/{optimization_id}")
async def get_optimization(
    optimization_id: str, optimizations: Optimizations
) -> OptimizationDetailOut:
    """One optimization, with its evaluation, project and outcome."""
    return await optimizations.detail(await optimizations.get(optimization_id))


@router.post("/optimizations/{optimization_id}/trials", status_code=201)
async def add_trial(
    optimization_id: str, body: TrialCreate, optimizations: Optimizations
) -> TrialOut:
    """Add a trial (extension): a run of the optimization's evaluation and what it tries."""
    optimization = await optimizations.get(optimization_id)
    trial = await optimizations.add_trial(optimization_id, body)
    return (await optimizations.trial_outs(optimization, [trial]))[0]


@router.get("/optimizations/{optimization_id}/trials")
async def list_trials(
    optimization_id: str, optimizations: Optimizations, page_size: IntQuery = 50, page: IntQuery = 1
) -> ListTrials:
    """An optimization's trials, oldest first, each with its run and observed score."""
    rows, count, nxt, prev = await optimizations.list_trials(
        optimization_id, PageParams(page, page_size, first_page=1)
    )
    return ListTrials(trials=TrialPage(count=count, results=rows, next=nxt, previous=prev))
