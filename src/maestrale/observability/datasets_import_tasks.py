"""The `observability.dataset_import` job: turn a source's items into records of a dataset.

Each batch of records is inserted in one transaction together with the task's progress. A
record's id is derived from the task and the item's key (uuid5), and ids already present are
not inserted again: a worker killed mid-import resumes on retry, recomputes the same records and
writes only the missing ones, so no record is ever duplicated. The task ends COMPLETED (its
message counts the records and the skipped items, by reason), FAILED (the source could not be
imported, or the last attempt failed) or CANCELED (the dataset was deleted meanwhile)."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from sqlalchemy import insert, select, update

from maestrale.core.blobs import BlobStore
from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.core.jobs.worker import JobContext, JobRegistry
from maestrale.observability import datasets_import_sources as sources
from maestrale.observability.datasets_import_sources import ImportFailed, Item, Source
from maestrale.observability.tables import Dataset, DatasetImportTask, DatasetRecord

KIND = "observability.dataset_import"
RECORD_NAMESPACE = uuid.UUID("6f0f4d43-3c4b-4a53-9d0e-2b1c5a7e9d11")
SourceFactory = Callable[[Database, str, dict[str, Any]], Source]


def record_id(task_id: str, key: str) -> str:
    """The id of the record an item of a task becomes: the same on every attempt."""
    return str(uuid.uuid5(RECORD_NAMESPACE, f"{task_id}:{key}"))


def summary(imported: int, skipped: Counter[str]) -> str:
    message = f"imported {imported} record{'' if imported == 1 else 's'}"
    if skipped:
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items()))
        message += f"; skipped {sum(skipped.values())} ({reasons})"
    return message


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
        self, db: Database, task_id: str, status: str, message: str, progress: int | None = None
    ) -> None:
        async with db.sessionmaker() as session, session.begin():
            task = await session.get(DatasetImportTask, task_id)
            if task is not None and task.status == "RUNNING":
                task.status, task.message, task.updated_at = status, message, utcnow()
                if progress is not None:
                    task.progress = progress

    async def _alive(self, db: Database, task_id: str) -> DatasetImportTask | None:
        """The task if it is still running and its dataset alive (else it is ended)."""
        async with db.sessionmaker() as session:
            task = await session.get(DatasetImportTask, task_id)
            if task is None or task.status != "RUNNING":
                return None
            dataset = await session.get(Dataset, task.dataset_id)
            if dataset is not None and dataset.deleted_at is None:
                return task
        await self._finish(db, task_id, "CANCELED", "the dataset was deleted")
        return None

    async def _run(self, ctx: JobContext, task_id: str) -> dict[str, Any]:
        task = await self._alive(ctx.db, task_id)
        if task is None:
            return {"status": "ended"}
        factory = self.factories[str(ctx.payload["source"])]
        source = factory(ctx.db, task.workspace_id, dict(ctx.payload))
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
        await self._finish(ctx.db, task_id, "COMPLETED", message, progress=100)
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
                "organization_id": task.organization_id,
                "workspace_id": task.workspace_id,
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
        async with db.sessionmaker() as session, session.begin():
            if rows:
                stmt = select(DatasetRecord.id).where(DatasetRecord.id.in_(list(rows)))
                present = set((await session.execute(stmt)).scalars())
                missing = [row for rid, row in rows.items() if rid not in present]
                if missing:
                    await session.execute(insert(DatasetRecord), missing)
            await session.execute(
                update(DatasetImportTask)
                .where(DatasetImportTask.id == task.id, DatasetImportTask.status == "RUNNING")
                .values(progress=min(99, done * 100 // max(total, 1)), updated_at=now)
                .execution_options(synchronize_session=False)
            )
        return len(rows)


def factories(blobs: BlobStore) -> dict[str, SourceFactory]:
    return {
        "explorer": sources.explorer,
        "dataset": sources.dataset,
        "playground": sources.playground,
        "campaign": sources.campaign,
        "file": sources.file_source(blobs),
    }


def register(registry: JobRegistry, blobs: BlobStore) -> None:
    registry.register(KIND, DatasetImportTasks(factories(blobs)).run)
