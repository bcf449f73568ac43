"""Imports into a dataset, requested: check the dataset and the source (every id must be found
in the workspace: all or nothing, the missing ones named), record a RUNNING task and enqueue the
durable `observability.dataset_import` job in the same transaction (datasets.tasks runs it).
Sources: chat completion events (explorer), another dataset's records, conversations
(playground), an uploaded JSONL file, a campaign's judged events, telemetry spans. Tasks are
listed and read per dataset."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from maestrale.core.blobs import BlobStore
from maestrale.core.errors import NotFound
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.files.service import FileService
from maestrale.observability.campaigns.service import CampaignService
from maestrale.observability.datasets.repository import ConversationReads, ImportTaskRepository
from maestrale.observability.datasets.service import DatasetService
from maestrale.observability.datasets.span_source import SpanReads, key_of
from maestrale.observability.datasets.tables import DatasetImportTask
from maestrale.observability.datasets.tasks import KIND
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.events.repository import ChatCompletionEventRepository
from maestrale.observability.pages import page_links

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
        self.tasks_repo = ImportTaskRepository(self.session, self.tenant)

    async def _missing(
        self, found: Callable[[Sequence[str]], Awaitable[set[str]]], ids: list[str]
    ) -> list[str]:
        """The ids of `ids` that `found` (a repository's look-up, workspace-scoped) misses."""
        present: set[str] = set()
        for i in range(0, len(ids), _CHECK_CHUNK):
            present |= await found(ids[i : i + _CHECK_CHUNK])
        return [i for i in ids if i not in present]

    def _not_found(self, what: str, missing: list[str], code: str) -> ObservabilityError:
        shown = ", ".join(missing[:20]) + (" ..." if len(missing) > 20 else "")
        return ObservabilityError(f"{what} not found: {shown}", code, status_code=404)

    async def _start(
        self, dataset_id: str, creator_id: str, source: str, params: dict[str, Any]
    ) -> DatasetImportTask:
        task = await self.tasks_repo.add(
            DatasetImportTask(
                id=new_id(),
                dataset_id=dataset_id,
                creator_id=creator_id,
                status="RUNNING",
                progress=0,
            )
        )
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
        events = ChatCompletionEventRepository(self.session, self.tenant)
        if missing := await self._missing(events.found_ids, ids):
            raise self._not_found("chat completion events", missing, "SEARCH_NOT_FOUND")
        return await self._start(dataset.id, creator_id, "explorer", {"ids": ids})

    async def from_dataset(
        self, dataset_id: str, record_ids: list[str], creator_id: str
    ) -> DatasetImportTask:
        dataset = await self.datasets.get(dataset_id)
        ids = unique(record_ids)
        if missing := await self._missing(self.datasets.records.found_ids, ids):
            raise self._not_found("dataset records", missing, "DATASET_RECORD_NOT_FOUND")
        return await self._start(dataset.id, creator_id, "dataset", {"ids": ids})

    async def from_playground(
        self, dataset_id: str, conversation_ids: list[str], creator_id: str
    ) -> DatasetImportTask:
        dataset = await self.datasets.get(dataset_id)
        ids = unique(conversation_ids)
        conversations = ConversationReads(self.session, self.tenant)
        if missing := await self._missing(conversations.found_ids, ids):
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

    async def from_spans(
        self,
        dataset_id: str,
        refs: list[tuple[str, str]],
        mappings: list[dict[str, Any]],
        creator_id: str,
    ) -> DatasetImportTask:
        """Spans by (trace id, span id), ids compared in lower case (as the store keeps them).
        A reference not found is skipped by the import (as the SDK documents), but a request
        none of whose spans is in the workspace is refused: it could import nothing."""
        dataset = await self.datasets.get(dataset_id)
        targets = [m["target_field"] for m in mappings]
        if doubled := sorted({t for t in targets if targets.count(t) > 1}):
            raise ObservabilityError(
                f"mapping_contract maps several sources to {', '.join(doubled)}",
                "VALIDATION_ERROR",
            )
        pairs = list(dict.fromkeys((t.lower(), s.lower()) for t, s in refs))
        reads = SpanReads(self.session, self.tenant)
        present = False
        for i in range(0, len(pairs), _CHECK_CHUNK):
            if await reads.found(pairs[i : i + _CHECK_CHUNK]):
                present = True
                break
        if not present:
            raise self._not_found("spans", [key_of(p) for p in pairs], "SPAN_NOT_FOUND")
        params = {"refs": [list(p) for p in pairs], "mappings": mappings}
        return await self._start(dataset.id, creator_id, "spans", params)

    async def task(self, dataset_id: str, task_id: str) -> DatasetImportTask:
        await self.datasets.get(dataset_id)
        task = await self.tasks_repo.task(dataset_id, task_id)
        if task is None:
            raise ObservabilityError(
                f"import task {task_id!r} not found", "DATASET_TASK_NOT_FOUND", status_code=404
            )
        return task

    async def tasks(
        self, dataset_id: str, page: PageParams
    ) -> tuple[list[DatasetImportTask], int, str | None, str | None]:
        await self.datasets.get(dataset_id)
        rows, count = await self.tasks_repo.page(dataset_id, page.offset, page.limit)
        base = f"/v1/observability/datasets/{dataset_id}/tasks"
        return rows, count, *page_links(base, page, count)
