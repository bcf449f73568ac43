"""The background jobs of libraries, as their producers enqueue them (in the caller's
transaction): processing a document at a generation, and removing it once it expires."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.tables import Job
from maestrale.libraries.tables import LibraryDocument

PROCESS_KIND = "libraries.process"
EXPIRE_KIND = "libraries.expire"
# Attempts at processing a document before it is put in error for good.
PROCESS_ATTEMPTS = 5


def _tenant(document: LibraryDocument) -> Tenant:
    # The library's workspace, where the document's rows are, whoever asked.
    return Tenant(document.organization_id, document.workspace_id)


async def enqueue_processing(
    session: AsyncSession, queue: JobQueue, document: LibraryDocument
) -> Job:
    """The job that processes the document at its current generation (once per generation)."""
    job = await queue.enqueue(
        session,
        PROCESS_KIND,
        {"document_id": document.id, "generation": document.generation},
        tenant=_tenant(document),
        max_attempts=PROCESS_ATTEMPTS,
        dedupe_key=f"library-document:{document.id}:{document.generation}",
    )
    document.job_id = job.id
    return job


async def enqueue_expiry(
    session: AsyncSession, queue: JobQueue, document: LibraryDocument, at: datetime
) -> Job:
    """The job that deletes the document once `at` has passed (if its expiry is still due)."""
    return await queue.enqueue(
        session,
        EXPIRE_KIND,
        {"document_id": document.id},
        tenant=_tenant(document),
        run_at=at,
        dedupe_key=f"library-document-expiry:{document.id}:{at.timestamp():.6f}",
    )
