"""The `batch.run` job: run a batch job's lines, then assemble its output and error files from
the recorded results and give it its final status, in the job's completion transaction."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.batch.progress import Progress, finish
from maestrale.batch.runner import BatchRun
from maestrale.batch.tables import BatchJob, BatchStatus
from maestrale.core.blobs import CHUNK
from maestrale.core.clock import as_utc, utcnow
from maestrale.core.jobs.worker import JobContext, JobInterrupted, JobRegistry, describe_error
from maestrale.files.tables import StoredFile
from maestrale.services import Services

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

    def __init__(self, services: Services) -> None:
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
                message = f"the job failed: {describe_error(exc, ctx.payload)}"
                async with ctx.db.session() as session:
                    await finish(
                        session, batch.id, status=BatchStatus.FAILED, output_file=None,
                        error_file=None, errors=[{"message": message[:2000], "count": 1}],
                    )  # fmt: skip
            raise

    async def _finish(
        self, ctx: JobContext, progress: Progress, reason: str, errors: list[dict[str, Any]]
    ) -> dict[str, Any]:
        batch = None if reason == "deleted" else await progress.reload()
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
        blobs = self.services.blobs

        async def effects(session: AsyncSession) -> None:
            done = await finish(
                session, batch.id, status=status, output_file=by_kind.get("batch_result"),
                error_file=by_kind.get("batch_error"), errors=errors, failure_summary=summary,
            )  # fmt: skip
            if done:
                session.add_all(files)
            else:  # deleted meanwhile: its files have no owner
                for f in files:
                    await blobs.delete(f.blob_key)

        ctx.on_complete(effects)
        return {"status": status, "completed": batch.completed_requests}

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
            id=file_id, organization_id=batch.organization_id, workspace_id=batch.workspace_id,
            user_id=batch.user_id, key_id=batch.key_id, visibility="workspace",
            filename=f"{batch.id}_{kind}.jsonl", purpose="batch",
            sample_type="batch_result" if ok else "batch_error", source="service", size=size,
            num_lines=lines, mimetype="application/jsonl", signature=digest.hexdigest(),
            blob_key=key, created_at=utcnow(),
        )  # fmt: skip


def register(registry: JobRegistry, services: Services) -> None:
    registry.register(KIND, BatchTasks(services).run)
