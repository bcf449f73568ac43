"""Datasets and their records: CRUD with soft delete (`deleted_at`), 1-based numbered pages.

A deleted dataset and its records are no longer found; a record is found only while its dataset
is alive."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, desc, select, update

from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.core.pagination import PageParams
from maestrale.core.repository import WorkspaceRepository
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.tables import Dataset, DatasetRecord


class DatasetRepository(WorkspaceRepository[Dataset]):
    model = Dataset

    def alive(self) -> Select[Dataset]:
        return self.select().where(Dataset.deleted_at.is_(None))


class RecordRepository(WorkspaceRepository[DatasetRecord]):
    model = DatasetRecord

    def alive(self) -> Select[DatasetRecord]:
        live_datasets = select(Dataset.id).where(
            Dataset.workspace_id == self.tenant.workspace_id, Dataset.deleted_at.is_(None)
        )
        return self.select().where(
            DatasetRecord.deleted_at.is_(None), DatasetRecord.dataset_id.in_(live_datasets)
        )


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


def page_links(base: str, page: PageParams, count: int) -> tuple[str | None, str | None]:
    last = max(1, -(-count // page.page_size))
    nxt = f"{base}?page={page.page + 1}&page_size={page.page_size}" if page.page < last else None
    prev = f"{base}?page={page.page - 1}&page_size={page.page_size}" if page.page > 1 else None
    return nxt, prev


class DatasetService:
    def __init__(self, datasets: DatasetRepository, records: RecordRepository) -> None:
        self.datasets = datasets
        self.records = records

    async def create(self, name: str, description: str, owner_id: str) -> Dataset:
        return await self.datasets.add(
            Dataset(id=new_id(), name=name, description=description, owner_id=owner_id)
        )

    async def get(self, dataset_id: str) -> Dataset:
        stmt = self.datasets.alive().where(Dataset.id == dataset_id)
        found = await self.datasets.list(stmt)
        if not found:
            raise ObservabilityError(
                f"dataset {dataset_id!r} not found", "DATASET_NOT_FOUND", status_code=404
            )
        return found[0]

    async def list_datasets(
        self, page: PageParams, q: str | None
    ) -> tuple[list[Dataset], int, str | None, str | None]:
        stmt = self.datasets.alive()
        if q:
            stmt = stmt.where(Dataset.name.icontains(q, autoescape=True))
        count = await self.datasets.count(stmt)
        stmt = stmt.order_by(desc(Dataset.created_at), desc(Dataset.id))
        rows = await self.datasets.list(stmt.offset(page.offset).limit(page.limit))
        return rows, count, *page_links("/v1/observability/datasets", page, count)

    async def update(self, dataset_id: str, name: str | None, description: str | None) -> Dataset:
        dataset = await self.get(dataset_id)
        if name is not None:
            dataset.name = name
        if description is not None:
            dataset.description = description
        dataset.updated_at = utcnow()
        await self.datasets.session.flush()
        return dataset

    async def delete(self, dataset_id: str) -> None:
        dataset = await self.get(dataset_id)
        dataset.deleted_at = dataset.updated_at = utcnow()
        await self.datasets.session.flush()

    async def add_record(
        self, dataset_id: str, payload: dict[str, Any], properties: dict[str, Any]
    ) -> DatasetRecord:
        dataset = await self.get(dataset_id)
        return await self.records.add(
            DatasetRecord(
                id=new_id(),
                dataset_id=dataset.id,
                payload=check_payload(payload),
                properties=properties,
                source="DIRECT_INPUT",
            )
        )

    async def list_records(
        self, dataset_id: str, page: PageParams
    ) -> tuple[list[DatasetRecord], int, str | None, str | None]:
        await self.get(dataset_id)
        stmt = self.records.alive().where(DatasetRecord.dataset_id == dataset_id)
        count = await self.records.count(stmt)
        stmt = stmt.order_by(DatasetRecord.created_at, DatasetRecord.id)
        rows = await self.records.list(stmt.offset(page.offset).limit(page.limit))
        base = f"/v1/observability/datasets/{dataset_id}/records"
        return rows, count, *page_links(base, page, count)

    async def record(self, record_id: str) -> DatasetRecord:
        found = await self.records.list(self.records.alive().where(DatasetRecord.id == record_id))
        if not found:
            raise ObservabilityError(
                f"dataset record {record_id!r} not found",
                "DATASET_RECORD_NOT_FOUND",
                status_code=404,
            )
        return found[0]

    async def replace_payload(self, record_id: str, payload: dict[str, Any]) -> None:
        record = await self.record(record_id)
        record.payload = check_payload(payload)
        record.updated_at = utcnow()
        await self.records.session.flush()

    async def replace_properties(self, record_id: str, properties: dict[str, Any]) -> None:
        record = await self.record(record_id)
        record.properties = properties
        record.updated_at = utcnow()
        await self.records.session.flush()

    async def delete_records(self, record_ids: list[str]) -> None:
        """All or nothing: an unknown (or foreign, or deleted) id deletes none and is named."""
        wanted: set[str] = set(record_ids)
        stmt = self.records.alive().where(DatasetRecord.id.in_(wanted))
        found = {r.id for r in await self.records.list(stmt)}
        missing = sorted(wanted - found)
        if missing:
            raise ObservabilityError(
                f"dataset records not found: {', '.join(missing[:20])}",
                "DATASET_RECORD_NOT_FOUND",
                status_code=404,
            )
        now = utcnow()
        await self.records.session.execute(
            update(DatasetRecord)
            .where(
                DatasetRecord.workspace_id == self.records.tenant.workspace_id,
                DatasetRecord.id.in_(found),
            )
            .values(deleted_at=now, updated_at=now)
            .execution_options(synchronize_session=False)
        )
