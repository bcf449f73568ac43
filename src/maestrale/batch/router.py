"""The /v1/batch/jobs group: create, list, get (optionally with results inline), cancel, delete."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import Depends, Query, Request

from maestrale.batch.schemas import BatchJobCreate, BatchJobDeleted, BatchJobList, BatchJobOut
from maestrale.batch.service import BatchService
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.core.dependencies import Blobs, Db
from maestrale.core.errors import error_responses
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.metadata import metadata_filter
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work, domain_router
from maestrale.gateway.dependencies import GatewayDep

router = domain_router(prefix="/batch/jobs", tags=["batch"])

# The list's own parameters; any other is a metadata key (see `_metadata_wanted`).
_OWN_PARAMS = "page page_size model agent_id metadata created_after created_by_me status order_by"
LIST_PARAMS = frozenset(_OWN_PARAMS.split())


def _service(
    work: Work, principal: StandardAuth, blobs: Blobs, gateway: GatewayDep, db: Db
) -> BatchService:
    return BatchService(
        work.session,
        Tenant.of(principal),
        principal.key_id,
        blobs=blobs,
        gateway=gateway,
        queue=JobQueue(db),
    )


Service = Annotated[BatchService, Depends(_service)]


def _metadata_wanted(request: Request) -> dict[str, str]:
    """Metadata to match: every query parameter that is not one of the list's own (the SDK sends
    a metadata map as separate parameters), and a JSON object in `metadata`, whose values that
    are not strings are matched as their JSON text (as the separate parameters would carry
    them)."""
    wanted = {k: v for k, v in request.query_params.multi_items() if k not in LIST_PARAMS}
    raw = request.query_params.get("metadata")
    wanted.update(metadata_filter(raw, non_string="stringify"))
    return wanted


@router.post("", response_model=BatchJobOut, responses=error_responses((404,)))
async def create_batch_job(body: BatchJobCreate, service: Service) -> BatchJobOut:
    """Create a batch job over an endpoint (`/v1/chat/completions`, `/v1/fim/completions`,
    `/v1/embeddings`, `/v1/moderations`, `/v1/chat/moderations`, `/v1/classifications`,
    `/v1/chat/classifications`): its requests are the lines `{"custom_id", "body"}` of the JSONL
    `input_files`, then the inline `requests`; `model` applies to every line. The job runs in
    the background; its results go to an output file and an error file."""
    return await service.describe(await service.create(body), inline=False)


@router.get("", response_model=BatchJobList)
async def list_batch_jobs(
    request: Request,
    service: Service,
    page: int = 0,
    page_size: int = 100,
    model: str | None = None,
    agent_id: str | None = None,
    created_after: datetime | None = None,
    created_by_me: bool = False,
    status: Annotated[list[str] | None, Query()] = None,
    order_by: Literal["created", "-created"] = "-created",
) -> BatchJobList:
    """The workspace's batch jobs (page counted from 0), filtered by model, agent, metadata
    (`?key=value` or `metadata={json}`), creation time, creator and status."""
    rows, total = await service.page(
        PageParams(page, page_size),
        model=model,
        agent_id=agent_id,
        metadata=_metadata_wanted(request),
        created_after=created_after,
        created_by_me=created_by_me,
        statuses=status or [],
        newest_first=order_by == "-created",
    )
    return BatchJobList(data=[BatchJobOut.of(row) for row in rows], total=total)


@router.get("/{job_id}", response_model=BatchJobOut, response_model_exclude_unset=False)
async def get_batch_job(
    job_id: str,
    service: Service,
    inline: bool | None = None,
) -> BatchJobOut:
    """A batch job with its counters; `inline=true` also returns its results (`outputs` and
    `errors`, one entry per line)."""
    return await service.describe(await service.get(job_id), inline=bool(inline))


@router.post("/{job_id}/cancel", response_model=BatchJobOut)
async def cancel_batch_job(job_id: str, service: Service) -> BatchJobOut:
    """Cancel a job: a queued one at once; a running one stops starting lines, lets the lines
    in flight finish, writes its files and ends CANCELLED."""
    return await service.describe(await service.cancel(job_id), inline=False)


@router.delete("/{job_id}", response_model=BatchJobDeleted)
async def delete_batch_job(job_id: str, work: Work, service: Service) -> BatchJobDeleted:
    """Delete a job and its recorded results (a running job stops); its output and error files
    remain until deleted."""
    await service.delete(job_id, work.on_commit)
    return BatchJobDeleted(id=job_id)
