"""The `/v1/rag` groups of mistralai 3.x: search deployments (`beta.rag.search_indexes`: four
operations) and ingestion pipeline configurations (`beta.rag.ingestion_pipeline_configurations`:
three); every answer a 200, as the SDK expects."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body, Path

from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.errors import error_responses
from maestrale.core.routing import Work, domain_router
from maestrale.rag import schemas as s
from maestrale.rag.service import DeploymentService, PipelineService

router = domain_router(prefix="/rag")

PathId = Annotated[str, Path(max_length=200)]
Metrics = Annotated[s.MetricsOnline | s.MetricsOffline, Body(discriminator="status")]


@router.get("/deployments", response_model=s.DeploymentList, tags=["beta.rag.search_indexes"])
async def list_deployments(work: Work, principal: StandardAuth) -> s.DeploymentList:
    """The workspace's deployments, oldest first, with their status and the document counts
    last reported (an index's count is null until a report names it)."""
    deployments = await DeploymentService(work.session, principal).summaries()
    return s.DeploymentList(deployments=deployments)


@router.put(
    "/deployments",
    response_model=s.Registered,
    responses=error_responses((422,)),
    tags=["beta.rag.search_indexes"],
)
async def register_deployment(
    body: s.DeploymentRegister, work: Work, principal: StandardAuth
) -> s.Registered:
    """Register a search deployment run elsewhere (Vespa: its version, its indexes and their
    fields and schema definitions, the URL it answers queries at), or register its name again:
    the same id, the definition replaced, an index keeping its id and count while its name
    stays. `query_url` is recorded, never called by this server. Bounds: 100 indexes, 1,000
    fields an index, 256 KiB a schema definition."""
    return s.Registered(id=await DeploymentService(work.session, principal).register(body))


@router.delete(
    "/deployments/{deployment_id}",
    response_model=s.Unregistered,
    responses=error_responses((404,)),
    tags=["beta.rag.search_indexes"],
)
async def unregister_deployment(
    deployment_id: PathId, work: Work, principal: StandardAuth
) -> s.Unregistered:
    """Remove a deployment and all this server knows of it (its indexes and metrics)."""
    await DeploymentService(work.session, principal).unregister(deployment_id)
    return s.Unregistered(id=deployment_id)


@router.put(
    "/deployments/{deployment_id}/metrics",
    response_model=s.DeploymentSummary,
    responses=error_responses((404, 422)),
    tags=["beta.rag.search_indexes"],
)
async def update_index_metrics(
    deployment_id: PathId, body: Metrics, work: Work, principal: StandardAuth
) -> s.DeploymentSummary:
    """Report a deployment's state. `online`: its document count and those of the indexes
    named (each must be one of its indexes); `offline`: the status only, or with
    `clear_metrics` the counts reset (0; null per index). Answers the deployment's summary."""
    return await DeploymentService(work.session, principal).report(deployment_id, body)


@router.get(
    "/ingestion_pipeline_configurations",
    response_model=list[s.PipelineOut],
    tags=["beta.rag.ingestion_pipeline_configurations"],
)
async def list_pipeline_configurations(work: Work, principal: StandardAuth) -> list[s.PipelineOut]:
    """The workspace's ingestion pipeline configurations, oldest first, with their run
    statistics."""
    return await PipelineService(work.session, principal).configurations()


@router.put(
    "/ingestion_pipeline_configurations",
    response_model=s.PipelineOut,
    responses=error_responses((422,)),
    tags=["beta.rag.ingestion_pipeline_configurations"],
)
async def register_pipeline_configuration(
    body: s.PipelineRegister, work: Work, principal: StandardAuth
) -> s.PipelineOut:
    """Register an ingestion pipeline configuration by name, or register the name again: the
    same id, the definition replaced (`pipeline_composition`, at most 100 steps, and
    `target_indexes`; what is not sent is cleared), the caller its author, the run statistics
    kept."""
    return await PipelineService(work.session, principal).register(body)


@router.put(
    "/ingestion_pipeline_configurations/{id}/run_info",
    response_model=s.PipelineOut,
    responses=error_responses((404, 422)),
    tags=["beta.rag.ingestion_pipeline_configurations"],
)
async def update_run_info(
    id: PathId, body: s.RunInfoIn, work: Work, principal: StandardAuth
) -> s.PipelineOut:
    """Report a run: its chunks are added to `total_chunks_count` (422 past 2**63 - 1), and it
    becomes the last run (`last_run_time`, `last_run_chunks_count`) unless a later run was
    reported already."""
    return await PipelineService(work.session, principal).record_run(id, body)
