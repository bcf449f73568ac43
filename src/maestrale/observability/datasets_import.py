"""Imports into a dataset, requested: check the dataset and the source (every id must be found
in the workspace: all or nothing, the missing ones named), record a RUNNING task and enqueue the
durable `observability.dataset_import` job in the same transaction (datasets_import_tasks runs
it). Sources: chat completion events (explorer), another dataset's records, conversations
(playground), an uploaded JSONL file, a campaign's judged events. Tasks are listed and read per
dataset."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import desc, select

from maestrale.conversations.tables import Conversation
from maestrale.core.blobs import BlobStore
from maestrale.core.errors import NotFound
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.files.service import FileService
from maestrale.observability.campaigns_service import CampaignService
from maestrale.observability.datasets_import_tasks import KIND
from maestrale.observability.datasets_service import DatasetService, page_links
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.tables import (
    ChatCompletionEvent,
    Dataset,
    DatasetImportTask,
    DatasetRecord,
)

_CHECK_CHUNK = 500


def unique(ids: Sequence[str]) -> list[str]:
    """The ids in their first order, each once."""
    return list(dict.fromkeys(ids))


class DatasetImports:
    def __init__(self, datasets: DatasetService, queue: JobQueue) -> None:
        self.datasets = datasets
        self.queue = queue
        self.session = datasets.datasets.session
        self.tenant = datasets.datasets.tenant

    async def _missing(self, model: Any, ids: list[str], *where: Any) -> list[str]:
        """The ids of `ids` with no row of `model` in the workspace (matching `where`)."""
        found: set[str] = set()
        for i in range(0, len(ids), _CHECK_CHUNK):
            chunk = ids[i : i + _CHECK_CHUNK]
            stmt = select(model.id).where(
                model.workspace_id == self.tenant.workspace_id, model.id.in_(chunk), *where
            )
            found.update((await self.session.execute(stmt)).scalars())
        return [i for i in ids if i not in found]

    def _not_found(self, what: str, missing: list[str], code: str) -> ObservabilityError:
        shown = ", ".join(missing[:20]) + (" ..." if len(missing) > 20 else "")
        return ObservabilityError(f"{what} not found: {shown}", code, status_code=404)

    async def _start(
        self, dataset_id: str, creator_id: str, source: str, params: dict[str, Any]
    ) -> DatasetImportTask:
        task = DatasetImportTask(
            id=new_id(),
            organization_id=self.tenant.organization_id,
            workspace_id=self.tenant.workspace_id,
            dataset_id=dataset_id,
            creator_id=creator_id,
            status="RUNNING",
            progress=0,
        )
        self.session.add(task)
        await self.session.flush()
        await self.queue.enqueue(
            self.session,
            KIND,
            {"task_id": task.id, "source": source, **params},
            tenant=self.tenant,
            dedupe_key=f"dataset-import:{task.id}",
        )
        return task

    async def from_explorer(
        self, dataset_id: str, event_ids: list[str], creator_id: str
    ) -> DatasetImportTask:
        dataset = await self.datasets.get(dataset_id)
        ids = unique(event_ids)
        if missing := await self._missing(ChatCompletionEvent, ids):
            raise self._not_found("chat completion events", missing, "SEARCH_NOT_FOUND")
        return await self._start(dataset.id, creator_id, "explorer", {"ids": ids})

    async def from_dataset(
        self, dataset_id: str, record_ids: list[str], creator_id: str
    ) -> DatasetImportTask:
        dataset = await self.datasets.get(dataset_id)
        ids = unique(record_ids)
        live = select(Dataset.id).where(
            Dataset.workspace_id == self.tenant.workspace_id, Dataset.deleted_at.is_(None)
        )
        alive = (DatasetRecord.deleted_at.is_(None), DatasetRecord.dataset_id.in_(live))
        if missing := await self._missing(DatasetRecord, ids, *alive):
            raise self._not_found("dataset records", missing, "DATASET_RECORD_NOT_FOUND")
        return await self._start(dataset.id, creator_id, "dataset", {"ids": ids})

    async def from_playground(
        self, dataset_id: str, conversation_ids: list[str], creator_id: str
    ) -> DatasetImportTask:
        dataset = await self.datasets.get(dataset_id)
        ids = unique(conversation_ids)
        if missing := await self._missing(Conversation, ids):
            # The group has no code for a missing conversation: the request names an id that
            # does not exist, a validation error.
            raise self._not_found("conversations", missing, "VALIDATION_ERROR")
        return await self._start(dataset.id, creator_id, "playground", {"ids": ids})

    async def from_file(
        self,
        dataset_id: str,
        file_id: str,
        creator_id: str,
        key_id: str | None,
        blobs: BlobStore,
    ) -> DatasetImportTask:
        dataset = await self.datasets.get(dataset_id)
        files = FileService(self.session, self.tenant, key_id, blobs)
        try:
            stored = await files.get(file_id)
        except NotFound as exc:
            raise ObservabilityError(exc.message, "VALIDATION_ERROR", status_code=404) from exc
        params = {"file_id": stored.id, "blob_key": stored.blob_key}
        return await self._start(dataset.id, creator_id, "file", params)

    async def from_campaign(
        self, dataset_id: str, campaign_id: str, creator_id: str, campaigns: CampaignService
    ) -> DatasetImportTask:
        dataset = await self.datasets.get(dataset_id)
        campaign = await campaigns.get(campaign_id)
        return await self._start(dataset.id, creator_id, "campaign", {"campaign_id": campaign.id})

    def _tasks(self, dataset_id: str) -> Any:
        return select(DatasetImportTask).where(
            DatasetImportTask.workspace_id == self.tenant.workspace_id,
            DatasetImportTask.dataset_id == dataset_id,
            DatasetImportTask.deleted_at.is_(None),
        )

    async def task(self, dataset_id: str, task_id: str) -> DatasetImportTask:
        await self.datasets.get(dataset_id)
        stmt = self._tasks(dataset_id).where(DatasetImportTask.id == task_id)
        task: DatasetImportTask | None = (await self.session.execute(stmt)).scalar_one_or_none()
        if task is None:
            raise ObservabilityError(
                f"import task {task_id!r} not found", "DATASET_TASK_NOT_FOUND", status_code=404
            )
        return task

    async def tasks(
        self, dataset_id: str, page: PageParams
    ) -> tuple[list[DatasetImportTask], int, str | None, str | None]:
        await self.datasets.get(dataset_id)
        stmt = self._tasks(dataset_id)
        count = await self.datasets.datasets.count(stmt)
        stmt = stmt.order_by(desc(DatasetImportTask.created_at), desc(DatasetImportTask.id))
        rows = list(
            (await self.session.execute(stmt.offset(page.offset).limit(page.limit))).scalars()
        )
        base = f"/v1/observability/datasets/{dataset_id}/tasks"
        return rows, count, *page_links(base, page, count)
