"""Datasets and their records: CRUD with soft delete (`deleted_at`), 1-based numbered pages.

A deleted dataset and its records are no longer found; a record is found only while its dataset
is alive."""

from __future__ import annotations

from typing import Any

from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.core.pagination import PageParams
from maestrale.observability.datasets.repository import DatasetRepository, RecordRepository
from maestrale.observability.datasets.tables import Dataset, DatasetRecord
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.pages import page_links


def check_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A conversation payload: `{"messages": [{"role": ..., ...}, ...], ...}`."""
    messages = payload.get("messages")
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages
    ):
        raise ObservabilityError(
            "payload must be a conversation: {'messages': [{'role': ..., 'content': ...}]}",
            "DATASET_RECORD_FORMAT_ERROR",
        )
    return payload


class DatasetService:
    def __init__(self, datasets: DatasetRepository, records: RecordRepository) -> None:
        self.datasets = datasets
        self.records = records

    async def create(self, name: str, description: str, owner_id: str) -> Dataset:
        """A new dataset, its slug made from its name (unique in the workspace)."""
        return await self.datasets.add_with_slug(
            Dataset(id=new_id(), name=name, description=description, owner_id=owner_id)
        )

    async def get(self, dataset_id: str) -> Dataset:
        dataset = await self.datasets.alive_by_id(dataset_id)
        if dataset is None:
            raise ObservabilityError(
                f"dataset {dataset_id!r} not found", "DATASET_NOT_FOUND", status_code=404
            )
        return dataset

    async def list_datasets(
        self, page: PageParams, q: str | None
    ) -> tuple[list[Dataset], int, str | None, str | None]:
        rows, count = await self.datasets.page(q, page.offset, page.limit)
        return rows, count, *page_links("/v1/observability/datasets", page, count)

    async def update(self, dataset_id: str, name: str | None, description: str | None) -> Dataset:
        dataset = await self.get(dataset_id)
        if name is not None:
            dataset.name = name
        if description is not None:
            dataset.description = description
        dataset.updated_at = utcnow()
        await self.datasets.flush()
        return dataset

    async def delete(self, dataset_id: str) -> None:
        dataset = await self.get(dataset_id)
        dataset.deleted_at = dataset.updated_at = utcnow()
        await self.datasets.flush()

    async def add_record(
        self,
        dataset_id: str,
        payload: dict[str, Any],
        properties: dict[str, Any],
        source: str = "DIRECT_INPUT",
    ) -> DatasetRecord:
        dataset = await self.get(dataset_id)
        return await self.records.add(
            DatasetRecord(
                id=new_id(),
                dataset_id=dataset.id,
                payload=check_payload(payload),
                properties=properties,
                source=source,
            )
        )

    async def list_records(
        self, dataset_id: str, page: PageParams
    ) -> tuple[list[DatasetRecord], int, str | None, str | None]:
        await self.get(dataset_id)
        rows, count = await self.records.page(dataset_id, page.offset, page.limit)
        base = f"/v1/observability/datasets/{dataset_id}/records"
        return rows, count, *page_links(base, page, count)

    async def record(self, record_id: str) -> DatasetRecord:
        record = await self.records.alive_by_id(record_id)
        if record is None:
            raise ObservabilityError(
                f"dataset record {record_id!r} not found",
                "DATASET_RECORD_NOT_FOUND",
                status_code=404,
            )
        return record

    async def replace_payload(self, record_id: str, payload: dict[str, Any]) -> None:
        record = await self.record(record_id)
        record.payload = check_payload(payload)
        record.updated_at = utcnow()
        await self.records.flush()

    async def replace_properties(self, record_id: str, properties: dict[str, Any]) -> None:
        record = await self.record(record_id)
        record.properties = properties
        record.updated_at = utcnow()
        await self.records.flush()

    async def delete_records(self, record_ids: list[str]) -> None:
        """All or nothing: an unknown (or foreign, or deleted) id deletes none and is named."""
        wanted: set[str] = set(record_ids)
        found = await self.records.found_ids(list(wanted))
        missing = sorted(wanted - found)
        if missing:
            raise ObservabilityError(
                f"dataset records not found: {', '.join(missing[:20])}",
                "DATASET_RECORD_NOT_FOUND",
                status_code=404,
            )
        await self.records.soft_delete(list(found))
