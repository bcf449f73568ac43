"""The `batch.run` job: run a batch job's lines, then assemble its output and error files from
the recorded results and give it its final status, in the job's completion unit of work."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.batch.endpoints import LineServices
from maestrale.batch.progress import Progress
from maestrale.batch.repository import BatchRunRepository
from maestrale.batch.runner import BatchRun
from maestrale.batch.tables import BatchJob, BatchStatus
from maestrale.core.auth.principal import Tenant
from maestrale.core.blobs import CHUNK
from maestrale.core.clock import as_utc, utcnow
from maestrale.core.jobs.worker import JobContext, JobInterrupted, JobRegistry, describe_error
from maestrale.files.repository import WorkspaceFiles
from maestrale.files.tables import StoredFile

log = logging.getLogger("maestrale.batch")

KIND = "batch.run"
ATTEMPTS = 10
# Output and error files get ids derived from the job's, so that an attempt that dies after
# writing a file and the attempt that redoes it write the same blob.
FILE_NAMESPACE = uuid.UUID("5b0f6f0e-3f57-4f0c-9a55-2f4d1d6a9b21")
STOPPED = {
    "cancelled": BatchStatus.CANCELLED,
    "timeout": BatchStatus.TIMEOUT_EXCEEDED,
    "failed": BatchStatus.FAILED,
}


class BatchTasks:
    """Runs batch jobs; `worker_limit` bounds the lines in flight across all jobs of a worker."""

    def __init__(self, services: LineServices) -> None:
        self.services = services
        self.worker_limit = asyncio.Semaphore(services.settings.batch_max_concurrency)

    async def run(self, ctx: JobContext) -> dict[str, Any]:
        progress = Progress(ctx.db, str(ctx.payload["batch_id"]))
        batch = await progress.start()
        if batch is None:
            return {"status": "deleted"}
        if batch.status in BatchStatus.FINAL:
            return {"status": batch.status}
        try:
            errors: list[dict[str, Any]] = []
            deadline = as_utc(batch.created_at) + timedelta(hours=batch.timeout_hours)
            if batch.status == BatchStatus.CANCELLATION_REQUESTED:
                reason = "cancelled"
            elif utcnow() >= deadline:
                reason = "timeout"
            else:
                run = BatchRun(self.services, ctx, batch, progress, self.worker_limit)
                reason = await run.run()
                errors = run.errors
            return await self._finish(ctx, progress, reason, errors)
        except JobInterrupted:
            raise
        except Exception as exc:
            if ctx.attempt >= ctx.max_attempts:
                await progress.fail(f"the job failed: {describe_error(exc, ctx.payload)}")
            raise

    async def _finish(
        self, ctx: JobContext, progress: Progress, reason: str, errors: list[dict[str, Any]]
    ) -> dict[str, Any]:
        batch = None if reason == "deleted" else await progress.load()
        if batch is None:
            return {"status": "deleted"}
        if reason in STOPPED:
            status = STOPPED[reason]
        elif batch.succeeded_requests == 0 and batch.failed_requests > 0:
            status = BatchStatus.FAILED  # every line failed: the job as a whole did
        else:
            status = BatchStatus.SUCCESS
        summary = await progress.failure_summary()
        files: list[StoredFile] = []
        if batch.succeeded_requests:
            files.append(await self._assemble(batch, progress, ok=True))
        if batch.failed_requests:
            files.append(await self._assemble(batch, progress, ok=False))
        by_kind = {f.sample_type: f.id for f in files}
        orphans: list[str] = []

        async def effects(session: AsyncSession) -> None:
            done = await BatchRunRepository(session, batch.id).finish(
                status=status,
                output_file=by_kind.get("batch_result"),
                error_file=by_kind.get("batch_error"),
                errors=errors,
                failure_summary=summary,
            )
            if not done:  # deleted meanwhile: its files have no owner
                orphans.extend(f.blob_key for f in files)
                return
            owned = WorkspaceFiles(session, Tenant(batch.organization_id, batch.workspace_id))
            for f in files:
                await owned.add(f)

        ctx.on_complete(effects)
        ctx.after_complete(lambda: self._drop(orphans))
        return {"status": status, "completed": batch.completed_requests}

    async def _drop(self, keys: list[str]) -> None:
        """Remove blobs nothing points to (after the commit: never a file row without its blob);
        a blob left behind is harmless, so a failure is only logged."""
        for key in keys:
            try:
                await self.services.blobs.delete(key)
            except Exception:
                log.warning("could not remove the orphaned blob %s", key, exc_info=True)

    async def _assemble(self, batch: BatchJob, progress: Progress, *, ok: bool) -> StoredFile:
        """Write the output (or error) file from the recorded results, in line order."""
        kind = "output" if ok else "error"
        file_id = str(uuid.uuid5(FILE_NAMESPACE, f"{batch.id}:{kind}"))
        key = f"{batch.workspace_id}/files/{file_id}"
        digest = hashlib.sha256()
        lines = 0

        async def chunks() -> AsyncIterator[bytes]:
            nonlocal lines
            buffer = bytearray()
            async for _, record in progress.records(ok):
                buffer += record.encode()
                buffer += b"\n"
                lines += 1
                if len(buffer) >= CHUNK:
                    digest.update(buffer)
                    yield bytes(buffer)
                    buffer.clear()
            if buffer:
                digest.update(buffer)
                yield bytes(buffer)

        size = await self.services.blobs.put(key, chunks())
        return StoredFile(
            id=file_id,
            organization_id=batch.organization_id,
            workspace_id=batch.workspace_id,
            user_id=batch.user_id,
            key_id=batch.key_id,
            visibility="workspace",
            filename=f"{batch.id}_{kind}.jsonl",
            purpose="batch",
            sample_type="batch_result" if ok else "batch_error",
            source="service",
            size=size,
            num_lines=lines,
            mimetype="application/jsonl",
            signature=digest.hexdigest(),
            blob_key=key,
            created_at=utcnow(),
        )


def register(registry: JobRegistry, services: LineServices) -> None:
    registry.register(KIND, BatchTasks(services).run)
