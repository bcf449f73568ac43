"""The /v1/batch/jobs group: create, list, get (optionally with results inline), cancel, delete."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import orjson
from fastapi import Query, Request

from maestrale.batch.schemas import BatchJobCreate, BatchJobDeleted, BatchJobList, BatchJobOut
from maestrale.batch.service import BatchService
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.routing import DbSession, domain_router

router = domain_router(prefix="/batch/jobs", tags=["batch"])

LIST_PARAMS = frozenset(
    {"page", "page_size", "model", "agent_id", "metadata", "created_after", "created_by_me",
     "status", "order_by"}
)  # fmt: skip


def _service(request: Request, session: DbSession, principal: Principal) -> BatchService:
    state = request.app.state
    return BatchService(
        session, Tenant.of(principal), principal.key_id,
        blobs=state.blobs, gateway=state.gateway, queue=JobQueue(state.db),
    )  # fmt: skip


def metadata_filter(request: Request) -> dict[str, str]:
    """Metadata to match: a JSON object in `metadata`, and every query parameter that is not
    one of the list's own (the SDK sends a metadata map as separate parameters)."""
    wanted: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        if name not in LIST_PARAMS:
            wanted[name] = value
    raw = request.query_params.get("metadata")
    if raw:
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):  # anything else (e.g. an SDK's unset sentinel): no filter
            wanted.update({str(k): v if isinstance(v, str) else orjson.dumps(v).decode()
                           for k, v in parsed.items()})  # fmt: skip
    return wanted


@router.post("", response_model=BatchJobOut)
async def create_batch_job(
    body: BatchJobCreate, request: Request, session: DbSession, principal: StandardAuth
) -> BatchJobOut:
    """Create a batch job over an endpoint (`/v1/chat/completions`, `/v1/fim/completions`,
    `/v1/embeddings`): its requests are the lines `{"custom_id", "body"}` of the JSONL
    `input_files`, then the inline `requests`; `model` applies to every line. The job runs in
    the background; its results go to an output file and an error file."""
    service = _service(request, session, principal)
    return await service.describe(await service.create(body), inline=False)


@router.get("", response_model=BatchJobList)
async def list_batch_jobs(
    request: Request,
    session: DbSession,
    principal: StandardAuth,
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
    rows, total = await _service(request, session, principal).page(
        PageParams(page, page_size),
        model=model,
        agent_id=agent_id,
        metadata=metadata_filter(request),
        created_after=created_after,
        created_by_me=created_by_me,
        statuses=status or [],
        newest_first=order_by == "-created",
    )
    return BatchJobList(data=[BatchJobOut.of(row) for row in rows], total=total)


@router.get("/{job_id}", response_model=BatchJobOut, response_model_exclude_unset=False)
async def get_batch_job(
    job_id: str,
    request: Request,
    session: DbSession,
    principal: StandardAuth,
    inline: bool | None = None,
) -> BatchJobOut:
    """A batch job with its counters; `inline=true` also returns its results (`outputs` and
    `errors`, one entry per line)."""
    service = _service(request, session, principal)
    return await service.describe(await service.get(job_id), inline=bool(inline))


@router.post("/{job_id}/cancel", response_model=BatchJobOut)
async def cancel_batch_job(
    job_id: str, request: Request, session: DbSession, principal: StandardAuth
) -> BatchJobOut:
    """Cancel a job: a queued one at once; a running one stops starting lines, lets the lines
    in flight finish, writes its files and ends CANCELLED."""
    service = _service(request, session, principal)
    return await service.describe(await service.cancel(job_id), inline=False)


@router.delete("/{job_id}", response_model=BatchJobDeleted)
async def delete_batch_job(
    job_id: str, request: Request, session: DbSession, principal: StandardAuth
) -> BatchJobDeleted:
    """Delete a job and its recorded results (a running job stops); its output and error files
    remain until deleted."""
    await _service(request, session, principal).delete(job_id)
    return BatchJobDeleted(id=job_id)
