"""The /v1/fine_tuning/jobs group (SDK 1.12.4 `client.fine_tuning.jobs`): list, create (or a dry
run), get, cancel and start."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Depends, Query

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.core.dependencies import Db, ReleasingBlobs
from maestrale.core.errors import error_responses
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work, domain_router
from maestrale.engines.dependencies import Engines
from maestrale.fine_tuning.estimates import registry_counter
from maestrale.fine_tuning.schemas import (
    ClassifierDetailedJobOut,
    ClassifierJobOut,
    CompletionDetailedJobOut,
    CompletionJobOut,
    CreatedJobOut,
    DetailedJobOut,
    DryRunOut,
    JobIn,
    JobsOut,
    job_out,
)
from maestrale.fine_tuning.service import FineTuningService, Training

router = domain_router(prefix="/fine_tuning/jobs", tags=["fine-tuning"])

Filter = Annotated[str | None, Query(max_length=256)]


def _service(
    work: Work,
    principal: StandardAuth,
    engines: Engines,
    blobs: ReleasingBlobs,
    db: Db,
    settings: AppSettings,
) -> FineTuningService:
    training = Training(
        registry=engines,
        blobs=blobs,
        queue=JobQueue(db),
        tokens_per_second=settings.fine_tuning_tokens_per_second,
        currency=settings.limits.currency,
        counter=registry_counter(engines),
    )
    return FineTuningService(work.session, Tenant.of(principal), principal.key_id, training)


Service = Annotated[FineTuningService, Depends(_service)]


@router.get("", response_model=JobsOut)
async def list_fine_tuning_jobs(
    service: Service,
    page: int = 0,
    page_size: int = 100,
    model: Filter = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    created_by_me: bool = False,
    status: Filter = None,
    wandb_project: Filter = None,
    wandb_name: Filter = None,
    suffix: Filter = None,
) -> JobsOut:
    """The workspace's fine-tuning jobs, newest first (page counted from 0), filtered by base
    model, creation time, creator, status and suffix. No job has a W&B integration, so a
    `wandb_project` or `wandb_name` filter matches none."""
    rows, total = await service.page(
        PageParams(page, page_size),
        model=model,
        created_after=created_after,
        created_before=created_before,
        created_by_me=created_by_me,
        status=status,
        wandb_project=wandb_project,
        wandb_name=wandb_name,
        suffix=suffix,
    )
    return JobsOut(data=[job_out(row) for row in rows], total=total)


@router.post(
    "",
    response_model=CreatedJobOut,
    responses=error_responses((404, 413)),
)
async def create_fine_tuning_job(
    body: JobIn,
    service: Service,
    dry_run: bool | None = None,
) -> DryRunOut | CompletionJobOut | ClassifierJobOut:
    """Create a fine-tuning job of a base model of the catalog that has the `fine_tuning`
    capability: its training and validation files (purpose `fine-tune`, JSONL) are checked
    line by line before anything is written. With `auto_start` (the default) the job is queued
    for training; otherwise it stays VALIDATED until started. A dry run (`?dry_run=true`, or
    `dry_run` in the body) writes nothing and returns the estimates: tokens, steps, duration
    and cost."""
    created = await service.create(body, dry_run=bool(dry_run or body.dry_run))
    return created if isinstance(created, DryRunOut) else job_out(created)


@router.get("/{job_id}", response_model=DetailedJobOut)
async def get_fine_tuning_job(
    job_id: str, service: Service
) -> CompletionDetailedJobOut | ClassifierDetailedJobOut:
    """A fine-tuning job with its events (oldest first) and checkpoints (by step)."""
    return await service.detailed(await service.get(job_id))


@router.post("/{job_id}/cancel", response_model=DetailedJobOut)
async def cancel_fine_tuning_job(
    job_id: str, service: Service
) -> CompletionDetailedJobOut | ClassifierDetailedJobOut:
    """Cancel a job: one not being trained yet is CANCELLED at once; one in training is
    CANCELLATION_REQUESTED until its worker has stopped, then CANCELLED (no model is made); a
    finished job is returned as it is."""
    return await service.detailed(await service.cancel(job_id))


@router.post("/{job_id}/start", response_model=DetailedJobOut, responses=error_responses((409,)))
async def start_fine_tuning_job(
    job_id: str, service: Service
) -> CompletionDetailedJobOut | ClassifierDetailedJobOut:
    """Start a job created with `auto_start` false (status VALIDATED): it is queued for
    training. Any other status is a 409."""
    return await service.detailed(await service.start(job_id))
