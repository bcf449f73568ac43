"""The `observability.dataset_import` job: turn a source's items into records of a dataset.

Each batch of records is inserted in one transaction together with the task's progress. A
record's id is derived from the task and the item's key (uuid5), and ids already present are
not inserted again: a worker killed mid-import resumes on retry, recomputes the same records and
writes only the missing ones, so no record is ever duplicated. The task ends COMPLETED (its
message counts the records and the skipped items, by reason, and its `result` the requested,
imported and skipped ones), FAILED (the source could not be imported, or the last attempt
failed) or CANCELED (the dataset was deleted meanwhile).

The job opens its own short sessions: one to check the task, one per batch to write it; a source
reads with its own (or reads a file's blob with none open)."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from maestrale.core.auth.principal import Tenant
from maestrale.core.blobs import BlobStore
from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.core.jobs.worker import JobContext, JobRegistry
from maestrale.observability.datasets import sources, span_source
from maestrale.observability.datasets.repository import (
    ImportTaskRepository,
    RecordRepository,
    import_task_tenant,
)
from maestrale.observability.datasets.sources import ImportFailed, Item, SourceFactory
from maestrale.observability.datasets.tables import DatasetImportTask

KIND = "observability.dataset_import"
RECORD_NAMESPACE = uuid.UUID("6f0f4d43-3c4b-4a53-9d0e-2b1c5a7e9d11")


def record_id(task_id: str, key: str) -> str:
    """The id of the record an item of a task becomes: the same on every attempt."""
    return str(uuid.uuid5(RECORD_NAMESPACE, f"{task_id}:{key}"))


def summary(imported: int, skipped: Counter[str]) -> str:
    message = f"imported {imported} record{'' if imported == 1 else 's'}"
    if skipped:
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items()))
        message += f"; skipped {sum(skipped.values())} ({reasons})"
    return message


def _tenant(task: DatasetImportTask) -> Tenant:
    return Tenant(task.organization_id, task.workspace_id)


class DatasetImportTasks:
    def __init__(self, factories: dict[str, SourceFactory]) -> None:
        self.factories = factories

    async def run(self, ctx: JobContext) -> dict[str, Any]:
        task_id = str(ctx.payload["task_id"])
        try:
            return await self._run(ctx, task_id)
        except ImportFailed as exc:
            await self._finish(ctx.db, task_id, "FAILED", exc.message)
            return {"status": "FAILED", "message": exc.message}
        except Exception as exc:
            if ctx.attempt >= ctx.max_attempts:
                await self._finish(ctx.db, task_id, "FAILED", f"the import failed: {exc}")
            raise

    async def _finish(
        self,
        db: Database,
        task_id: str,
        status: str,
        message: str,
        progress: int | None = None,
        result: dict[str, int] | None = None,
    ) -> None:
        async with db.transaction() as work:
            tenant = await import_task_tenant(work.session, task_id)
            if tenant is not None:
                tasks = ImportTaskRepository(work.session, tenant)
                await tasks.finish(task_id, status, message, progress, result)

    async def _alive(self, db: Database, task_id: str) -> DatasetImportTask | None:
        """The task if it is still running and its dataset alive (else it is ended)."""
        async with db.transaction() as work:
            tenant = await import_task_tenant(work.session, task_id)
            if tenant is None:
                return None
            task, dataset_alive = await ImportTaskRepository(work.session, tenant).running(task_id)
        if task is None:
            return None
        if dataset_alive:
            return task
        await self._finish(db, task_id, "CANCELED", "the dataset was deleted")
        return None

    async def _run(self, ctx: JobContext, task_id: str) -> dict[str, Any]:
        task = await self._alive(ctx.db, task_id)
        if task is None:
            return {"status": "ended"}
        factory = self.factories[str(ctx.payload["source"])]
        source = factory(ctx.db, _tenant(task), dict(ctx.payload))
        total = await source.total()
        done, imported, skipped = 0, 0, Counter[str]()
        async for batch in source.batches():
            ctx.check()
            if await self._alive(ctx.db, task_id) is None:
                return {"status": "CANCELED"}
            imported += await self._write(ctx.db, task, batch, done + len(batch), total)
            done += len(batch)
            skipped.update(i.skipped or "" for i in batch if i.payload is None)
        message = summary(imported, skipped)
        counts = {
            "requested_record_count": done,
            "imported_record_count": imported,
            "skipped_record_count": sum(skipped.values()),
        }
        await self._finish(ctx.db, task_id, "COMPLETED", message, progress=100, result=counts)
        return {"status": "COMPLETED", "imported": imported, "skipped": sum(skipped.values())}

    async def _write(
        self, db: Database, task: DatasetImportTask, batch: list[Item], done: int, total: int
    ) -> int:
        """Insert the batch's missing records and the task's progress, in one transaction;
        the number of records of the batch (written now or by an earlier attempt)."""
        now = utcnow()
        rows = {
            record_id(task.id, item.key): {
                "id": record_id(task.id, item.key),
                "dataset_id": task.dataset_id,
                "payload": item.payload,
                "properties": item.properties,
                "source": item.source,
                "created_at": now,
                "updated_at": now,
            }
            for item in batch
            if item.payload is not None
        }
        async with db.transaction() as work:
            await RecordRepository(work.session, _tenant(task)).insert_missing(rows)
            progress = min(99, done * 100 // max(total, 1))
            await ImportTaskRepository(work.session, _tenant(task)).progress(task.id, progress)
        return len(rows)


def factories(blobs: BlobStore) -> dict[str, SourceFactory]:
    return {
        "explorer": sources.explorer,
        "dataset": sources.dataset,
        "playground": sources.playground,
        "campaign": sources.campaign,
        "file": sources.file_source(blobs),
        "spans": span_source.spans,
    }


def register(registry: JobRegistry, blobs: BlobStore) -> None:
    registry.register(KIND, DatasetImportTasks(factories(blobs)).run)
