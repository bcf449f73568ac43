"""Evaluation pipelines: judges run over the spans that arrive (observability)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Response

from maestrale.core.auth.dependencies import CurrentTenant, StandardAuth
from maestrale.core.dependencies import Db
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work
from maestrale.observability.errors import observability_router
from maestrale.observability.pipelines.repository import PipelineRepository
from maestrale.observability.pipelines.schemas import (
    PipelineCreate,
    PipelineList,
    PipelineOut,
    PipelinePage,
    PipelineUpdate,
)
from maestrale.observability.pipelines.service import PipelineService
from maestrale.observability.pipelines.shapes import pipeline_out

router = observability_router(prefix="/observability", tags=["observability"])


def pipeline_service(work: Work, tenant: CurrentTenant, db: Db) -> PipelineService:
    return PipelineService(PipelineRepository(work.session, tenant), JobQueue(db))


Pipelines = Annotated[PipelineService, Depends(pipeline_service)]


async def _out(pipelines: PipelineService, pipeline_id: str) -> PipelineOut:
    pipeline = await pipelines.get(pipeline_id)
    configs = await pipelines.configs_of([pipeline])
    return pipeline_out(pipeline, configs[pipeline.id])


@router.get("/pipelines")
async def list_pipelines(
    pipelines: Pipelines,
    enabled: Annotated[bool | None, Query()] = None,
    page_size: Annotated[int, Query()] = 50,
    page: Annotated[int, Query()] = 1,
    q: Annotated[str | None, Query(max_length=500)] = None,
) -> PipelineList:
    """The workspace's pipelines, newest first, in numbered pages; `enabled` keeps the enabled
    (or disabled) ones, `q` those whose name contains it (case-insensitive)."""
    rows, count, nxt, prev = await pipelines.list_pipelines(
        PageParams(page, page_size, first_page=1), enabled, q
    )
    configs = await pipelines.configs_of(rows)
    results = [pipeline_out(r, configs[r.id]) for r in rows]
    return PipelineList(
        pipelines=PipelinePage(count=count, results=results, next=nxt, previous=prev)
    )


@router.post("/pipelines", status_code=201)
async def create_pipeline(
    body: PipelineCreate, pipelines: Pipelines, principal: StandardAuth
) -> PipelineOut:
    """Create a pipeline: each of its `definitions` names a judge by slug (the judge's id, its
    name, or its name made a slug) and becomes a judge-v1 config with its sampling. From now
    on, the spans that arrive and match any selector's `filter` (the search language over
    spans) are judged in the background, a few seconds after they arrive, and each verdict is
    stored as a span evaluation."""
    pipeline = await pipelines.create(body, principal)
    return await _out(pipelines, pipeline.id)


@router.get("/pipelines/{pipeline_id}")
async def get_pipeline(pipeline_id: str, pipelines: Pipelines) -> PipelineOut:
    """One pipeline, with its configs."""
    return await _out(pipelines, pipeline_id)


@router.put("/pipelines/{pipeline_id}")
async def update_pipeline(
    pipeline_id: str, body: PipelineUpdate, pipelines: Pipelines, principal: StandardAuth
) -> PipelineOut:
    """Change a pipeline: the fields sent replace its own (`definitions` its configs; a judge it
    keeps keeps its config). Disabling it stops its runs; enabling it resumes them from where
    they stopped."""
    await pipelines.update(pipeline_id, body, principal)
    return await _out(pipelines, pipeline_id)


@router.delete("/pipelines/{pipeline_id}", status_code=204)
async def delete_pipeline(pipeline_id: str, pipelines: Pipelines) -> Response:
    """Delete a pipeline and its configs (its span evaluations stay)."""
    await pipelines.delete(pipeline_id)
    return Response(status_code=204)
