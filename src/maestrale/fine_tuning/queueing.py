"""The queue job that trains a fine-tuning job, as the API enqueues it (in the caller's
transaction); the worker's handler of `TRAIN_KIND` takes `{"job_id"}`."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.tables import Job
from maestrale.fine_tuning.tables import FineTuningJob

TRAIN_KIND = "fine_tuning.train"
# Attempts at training a job (a worker killed mid-training resumes from its last checkpoint).
TRAIN_ATTEMPTS = 5


async def enqueue_training(session: AsyncSession, queue: JobQueue, row: FineTuningJob) -> Job:
    """The job that trains `row` (once per fine-tuning job); its id goes to `queue_job_id`."""
    job = await queue.enqueue(
        session,
        TRAIN_KIND,
        {"job_id": row.id},
        tenant=Tenant(row.organization_id, row.workspace_id),
        max_attempts=TRAIN_ATTEMPTS,
        dedupe_key=f"fine_tuning:{row.id}",
    )
    row.queue_job_id = job.id
    await session.flush()
    return job
