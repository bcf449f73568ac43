"""All SQL of datasets, their records and their import tasks, scoped to the caller's workspace.

A record is alive while it and its dataset are (neither has `deleted_at`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, desc, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.conversations.tables import Conversation, ConversationEntry
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.repository import WorkspaceRepository
from maestrale.observability.datasets.slugs import free_slug, slug_of
from maestrale.observability.datasets.tables import Dataset, DatasetImportTask, DatasetRecord

_SLUG_ATTEMPTS = 5


class DatasetRepository(WorkspaceRepository[Dataset]):
    model = Dataset

    def alive(self) -> Select[Dataset]:
        return self.select().where(Dataset.deleted_at.is_(None))

    async def alive_by_id(self, dataset_id: str) -> Dataset | None:
        found = await self.list(self.alive().where(Dataset.id == dataset_id))
        return found[0] if found else None

    async def slugs_from(self, base: str) -> set[str]:
        """The workspace's slugs (deleted datasets' too) that are `base` or `base-…`."""
        stmt = select(Dataset.slug).where(
            Dataset.workspace_id == self.tenant.workspace_id,
            or_(Dataset.slug == base, Dataset.slug.startswith(f"{base}-", autoescape=True)),
        )
        return set((await self.session.execute(stmt)).scalars())

    async def add_with_slug(self, row: Dataset) -> Dataset:
        """Insert `row` with the first free slug of its name; a slug another request took
        meanwhile (the unique constraint) makes it take the next."""
        base = slug_of(row.name)
        attempt = 0
        while True:
            row.slug = free_slug(base, await self.slugs_from(base))
            try:
                async with self.session.begin_nested():
                    return await self.add(row)
            except IntegrityError:
                attempt += 1
                if attempt == _SLUG_ATTEMPTS:
                    raise
                if row in self.session:
                    self.session.expunge(row)

    async def page(self, q: str | None, offset: int, limit: int) -> tuple[list[Dataset], int]:
        """A page of the live datasets, newest first, and their total."""
        stmt = self.alive()
        if q:
            stmt = stmt.where(Dataset.name.icontains(q, autoescape=True))
        count = await self.count(stmt)
        stmt = stmt.order_by(desc(Dataset.created_at), desc(Dataset.id))
        return await self.list(stmt.offset(offset).limit(limit)), count

    async def flush(self) -> None:
        await self.session.flush()


class RecordRepository(WorkspaceRepository[DatasetRecord]):
    model = DatasetRecord

    def alive(self) -> Select[DatasetRecord]:
        live_datasets = select(Dataset.id).where(
            Dataset.workspace_id == self.tenant.workspace_id, Dataset.deleted_at.is_(None)
        )
        return self.select().where(
            DatasetRecord.deleted_at.is_(None), DatasetRecord.dataset_id.in_(live_datasets)
        )

    async def alive_by_id(self, record_id: str) -> DatasetRecord | None:
        found = await self.list(self.alive().where(DatasetRecord.id == record_id))
        return found[0] if found else None

    async def alive_by_ids(self, record_ids: Sequence[str]) -> list[DatasetRecord]:
        return await self.list(self.alive().where(DatasetRecord.id.in_(list(record_ids))))

    async def found_ids(self, record_ids: Sequence[str]) -> set[str]:
        """Which of these ids are live records of the workspace."""
        return {r.id for r in await self.alive_by_ids(record_ids)}

    async def page(
        self, dataset_id: str, offset: int, limit: int
    ) -> tuple[list[DatasetRecord], int]:
        """A page of a dataset's live records, oldest first, and their total."""
        stmt = self.alive().where(DatasetRecord.dataset_id == dataset_id)
        count = await self.count(stmt)
        stmt = stmt.order_by(DatasetRecord.created_at, DatasetRecord.id)
        return await self.list(stmt.offset(offset).limit(limit)), count

    async def after(
        self, dataset_id: str, position: tuple[datetime, str] | None, limit: int
    ) -> list[DatasetRecord]:
        """The dataset's live records after `position` (created_at, id), oldest first: one
        keyset page. The rows are not kept in the session (a long read must not pile them up)."""
        stmt = self.alive().where(DatasetRecord.dataset_id == dataset_id)
        if position is not None:
            created, rid = position
            stmt = stmt.where(
                or_(
                    DatasetRecord.created_at > created,
                    and_(DatasetRecord.created_at == created, DatasetRecord.id > rid),
                )
            )
        stmt = stmt.order_by(DatasetRecord.created_at, DatasetRecord.id).limit(limit)
        rows = await self.list(stmt)
        for row in rows:
            self.session.expunge(row)
        return rows

    async def soft_delete(self, record_ids: Sequence[str]) -> None:
        now = utcnow()
        await self.session.execute(
            update(DatasetRecord)
            .where(
                DatasetRecord.workspace_id == self.tenant.workspace_id,
                DatasetRecord.id.in_(list(record_ids)),
            )
            .values(deleted_at=now, updated_at=now)
            .execution_options(synchronize_session=False)
        )

    async def insert_missing(self, rows: dict[str, dict[str, Any]]) -> None:
        """Insert the rows (by record id) of the workspace that are not there yet."""
        if not rows:
            return
        stmt = select(DatasetRecord.id).where(
            DatasetRecord.workspace_id == self.tenant.workspace_id,
            DatasetRecord.id.in_(list(rows)),
        )
        present = set((await self.session.execute(stmt)).scalars())
        owner = {
            "organization_id": self.tenant.organization_id,
            "workspace_id": self.tenant.workspace_id,
        }
        missing = [{**row, **owner} for rid, row in rows.items() if rid not in present]
        if missing:
            await self.session.execute(insert(DatasetRecord), missing)

    async def flush(self) -> None:
        await self.session.flush()


async def import_task_tenant(session: AsyncSession, task_id: str) -> Tenant | None:
    """The workspace of an import task, for its job: the job holds only the task's id, and every
    query it makes next is scoped to this workspace."""
    stmt = select(DatasetImportTask.organization_id, DatasetImportTask.workspace_id).where(
        DatasetImportTask.id == task_id
    )
    row = (await session.execute(stmt)).one_or_none()
    return None if row is None else Tenant(row[0], row[1])


class ImportTaskRepository(WorkspaceRepository[DatasetImportTask]):
    model = DatasetImportTask

    def of_dataset(self, dataset_id: str) -> Select[DatasetImportTask]:
        return self.select().where(
            DatasetImportTask.dataset_id == dataset_id, DatasetImportTask.deleted_at.is_(None)
        )

    async def task(self, dataset_id: str, task_id: str) -> DatasetImportTask | None:
        found = await self.list(self.of_dataset(dataset_id).where(DatasetImportTask.id == task_id))
        return found[0] if found else None

    async def page(
        self, dataset_id: str, offset: int, limit: int
    ) -> tuple[list[DatasetImportTask], int]:
        """A page of a dataset's import tasks, newest first, and their total."""
        stmt = self.of_dataset(dataset_id)
        count = await self.count(stmt)
        stmt = stmt.order_by(desc(DatasetImportTask.created_at), desc(DatasetImportTask.id))
        return await self.list(stmt.offset(offset).limit(limit)), count

    async def running(self, task_id: str) -> tuple[DatasetImportTask | None, bool]:
        """The task if it is still RUNNING (else None), and whether its dataset is alive."""
        task = await self.get(task_id)
        if task is None or task.status != "RUNNING":
            return None, False
        dataset = await DatasetRepository(self.session, self.tenant).alive_by_id(task.dataset_id)
        return task, dataset is not None

    async def finish(
        self,
        task_id: str,
        status: str,
        message: str,
        progress: int | None = None,
        result: dict[str, int] | None = None,
    ) -> None:
        """End a RUNNING task with its status, message and counts (an ended task stays as it
        is)."""
        values: dict[str, Any] = {"status": status, "message": message, "updated_at": utcnow()}
        if progress is not None:
            values["progress"] = progress
        if result is not None:
            values["result"] = result
        await self._update_running(task_id, values)

    async def progress(self, task_id: str, progress: int) -> None:
        await self._update_running(task_id, {"progress": progress, "updated_at": utcnow()})

    async def _update_running(self, task_id: str, values: dict[str, Any]) -> None:
        await self.session.execute(
            update(DatasetImportTask)
            .where(
                DatasetImportTask.workspace_id == self.tenant.workspace_id,
                DatasetImportTask.id == task_id,
                DatasetImportTask.status == "RUNNING",
            )
            .values(**values)
            .execution_options(synchronize_session=False)
        )


class ConversationReads:
    """The conversations an import reads (of the Conversations API), scoped to the workspace."""

    def __init__(self, session: AsyncSession, tenant: Tenant) -> None:
        self.session = session
        self.tenant = tenant

    async def found_ids(self, conversation_ids: Sequence[str]) -> set[str]:
        stmt = select(Conversation.id).where(
            Conversation.workspace_id == self.tenant.workspace_id,
            Conversation.id.in_(list(conversation_ids)),
        )
        return set((await self.session.execute(stmt)).scalars())

    async def with_entries(
        self, conversation_ids: Sequence[str]
    ) -> list[tuple[Conversation, list[dict[str, Any]]]]:
        """The conversations found, each with its entries' bodies in order."""
        stmt = select(Conversation).where(
            Conversation.workspace_id == self.tenant.workspace_id,
            Conversation.id.in_(list(conversation_ids)),
        )
        conversations = {c.id: c for c in (await self.session.execute(stmt)).scalars()}
        entries: dict[str, list[dict[str, Any]]] = {c: [] for c in conversations}
        if conversations:
            rows = await self.session.execute(
                select(ConversationEntry.conversation_id, ConversationEntry.body)
                .where(ConversationEntry.conversation_id.in_(list(conversations)))
                .order_by(ConversationEntry.conversation_id, ConversationEntry.seq)
            )
            for conversation_id, body in rows:
                entries[conversation_id].append(body)
        return [(c, entries[cid]) for cid, c in conversations.items()]
