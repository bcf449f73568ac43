"""Datasets, dataset records, imports into datasets and exports (beta observability)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request, Response

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import CurrentTenant, StandardAuth
from maestrale.core.auth.principal import Principal
from maestrale.core.dependencies import Blobs, Db, ReleasingBlobs, SecretKey
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work
from maestrale.observability.campaigns.router import Campaigns
from maestrale.observability.datasets.export import export_to_jsonl
from maestrale.observability.datasets.imports import DatasetImports
from maestrale.observability.datasets.repository import DatasetRepository, RecordRepository
from maestrale.observability.datasets.schemas import (
    DatasetCreate,
    DatasetExport,
    DatasetImportTaskList,
    DatasetImportTaskOut,
    DatasetImportTaskPage,
    DatasetList,
    DatasetOut,
    DatasetPage,
    DatasetUpdate,
    ImportFromCampaign,
    ImportFromDataset,
    ImportFromExplorer,
    ImportFromFile,
    ImportFromPlayground,
    ImportFromSpans,
    RecordCreate,
    RecordList,
    RecordOut,
    RecordPage,
    RecordPayload,
    RecordProperties,
    RecordsBulkDelete,
)
from maestrale.observability.datasets.service import DatasetService
from maestrale.observability.errors import observability_router

router = observability_router(prefix="/observability", tags=["observability"])

PageSize = Annotated[int, Query()]
Page = Annotated[int, Query()]


def _datasets(work: Work, tenant: CurrentTenant) -> DatasetService:
    return DatasetService(
        DatasetRepository(work.session, tenant), RecordRepository(work.session, tenant)
    )


Datasets = Annotated[DatasetService, Depends(_datasets)]


def _imports(datasets: Datasets, db: Db) -> DatasetImports:
    return DatasetImports(datasets, JobQueue(db))


Imports = Annotated[DatasetImports, Depends(_imports)]


def _creator(principal: Principal) -> str:
    return principal.user_id or principal.key_id


@router.get("/datasets")
async def list_datasets(
    datasets: Datasets,
    page_size: PageSize = 50,
    page: Page = 1,
    q: Annotated[str | None, Query()] = None,
) -> DatasetList:
    """The workspace's datasets, newest first, in numbered pages; `q` keeps those whose name
    contains it (case-insensitive)."""
    rows, count, nxt, prev = await datasets.list_datasets(
        PageParams(page, page_size, first_page=1), q
    )
    results = [DatasetOut.model_validate(r) for r in rows]
    return DatasetList(datasets=DatasetPage(count=count, results=results, next=nxt, previous=prev))


@router.post("/datasets", status_code=201)
async def create_dataset(
    body: DatasetCreate, datasets: Datasets, principal: StandardAuth
) -> DatasetOut:
    """Create an empty dataset."""
    row = await datasets.create(body.name, body.description, _creator(principal))
    return DatasetOut.model_validate(row)


@router.get("/datasets/{dataset_id}")
async def get_dataset(dataset_id: str, datasets: Datasets) -> DatasetOut:
    """One dataset."""
    return DatasetOut.model_validate(await datasets.get(dataset_id))


@router.patch("/datasets/{dataset_id}")
async def update_dataset(dataset_id: str, body: DatasetUpdate, datasets: Datasets) -> DatasetOut:
    """Rename a dataset or change its description (the fields given only)."""
    row = await datasets.update(dataset_id, body.name, body.description)
    return DatasetOut.model_validate(row)


@router.delete("/datasets/{dataset_id}", status_code=204)
async def delete_dataset(dataset_id: str, datasets: Datasets) -> Response:
    """Delete a dataset: it and its records are no longer found, and its running imports are
    canceled."""
    await datasets.delete(dataset_id)
    return Response(status_code=204)


@router.get("/datasets/{dataset_id}/records")
async def list_records(
    dataset_id: str,
    datasets: Datasets,
    page_size: PageSize = 50,
    page: Page = 1,
) -> RecordList:
    """The dataset's records, oldest first, in numbered pages."""
    rows, count, nxt, prev = await datasets.list_records(
        dataset_id, PageParams(page, page_size, first_page=1)
    )
    results = [RecordOut.model_validate(r) for r in rows]
    return RecordList(records=RecordPage(count=count, results=results, next=nxt, previous=prev))


@router.post("/datasets/{dataset_id}/records", status_code=201)
async def create_record(dataset_id: str, body: RecordCreate, datasets: Datasets) -> RecordOut:
    """Add a record to the dataset: a conversation payload (`{"messages": [...]}`), free
    properties and the channel the caller declares (`source`: `DIRECT_INPUT`, the default, or
    `TELEMETRY_SPAN`)."""
    row = await datasets.add_record(dataset_id, body.payload, body.properties, body.source)
    return RecordOut.model_validate(row)


@router.post("/dataset-records/bulk-delete", status_code=204)
async def bulk_delete_records(body: RecordsBulkDelete, datasets: Datasets) -> Response:
    """Delete records by id, all or none: an id not found deletes nothing and is named."""
    await datasets.delete_records(body.dataset_record_ids)
    return Response(status_code=204)


@router.get("/dataset-records/{dataset_record_id}")
async def get_record(dataset_record_id: str, datasets: Datasets) -> RecordOut:
    """One record of a live dataset."""
    return RecordOut.model_validate(await datasets.record(dataset_record_id))


@router.delete("/dataset-records/{dataset_record_id}", status_code=204)
async def delete_record(dataset_record_id: str, datasets: Datasets) -> Response:
    """Delete one record."""
    await datasets.delete_records([dataset_record_id])
    return Response(status_code=204)


@router.put("/dataset-records/{dataset_record_id}/payload", status_code=204)
async def replace_payload(
    dataset_record_id: str, body: RecordPayload, datasets: Datasets
) -> Response:
    """Replace a record's conversation payload (`{"messages": [...]}`)."""
    await datasets.replace_payload(dataset_record_id, body.payload)
    return Response(status_code=204)


@router.put("/dataset-records/{dataset_record_id}/properties", status_code=204)
async def replace_properties(
    dataset_record_id: str, body: RecordProperties, datasets: Datasets
) -> Response:
    """Replace a record's properties, as a whole."""
    await datasets.replace_properties(dataset_record_id, body.properties)
    return Response(status_code=204)


@router.post("/datasets/{dataset_id}/imports/from-campaign", status_code=202)
async def import_campaign(
    dataset_id: str,
    body: ImportFromCampaign,
    imports: Imports,
    campaigns: Campaigns,
    principal: StandardAuth,
) -> DatasetImportTaskOut:
    """Import a campaign's judged events (their verdicts as properties); events not judged yet
    or whose judging failed are skipped. Runs as a task: poll `tasks/{task_id}`."""
    task = await imports.from_campaign(dataset_id, body.campaign_id, _creator(principal), campaigns)
    return DatasetImportTaskOut.model_validate(task)


@router.post("/datasets/{dataset_id}/imports/from-explorer", status_code=202)
async def import_explorer(
    dataset_id: str,
    body: ImportFromExplorer,
    imports: Imports,
    principal: StandardAuth,
) -> DatasetImportTaskOut:
    """Import chat completion events by id (request and response messages as the payload)."""
    task = await imports.from_explorer(dataset_id, body.completion_event_ids, _creator(principal))
    return DatasetImportTaskOut.model_validate(task)


@router.post("/datasets/{dataset_id}/imports/from-file", status_code=202)
async def import_file(
    dataset_id: str,
    body: ImportFromFile,
    imports: Imports,
    principal: StandardAuth,
    blobs: Blobs,
) -> DatasetImportTaskOut:
    """Import an uploaded JSONL file: one record a line, `{"payload", "properties"}` (what the
    export writes) or a bare conversation `{"messages": [...]}`. One bad line fails the task
    and imports nothing."""
    task = await imports.from_file(
        dataset_id, body.file_id, _creator(principal), principal.key_id, blobs
    )
    return DatasetImportTaskOut.model_validate(task)


@router.post("/datasets/{dataset_id}/imports/from-playground", status_code=202)
async def import_playground(
    dataset_id: str,
    body: ImportFromPlayground,
    imports: Imports,
    principal: StandardAuth,
) -> DatasetImportTaskOut:
    """Import conversations (of the Conversations API) by id: their entries as chat messages."""
    task = await imports.from_playground(dataset_id, body.conversation_ids, _creator(principal))
    return DatasetImportTaskOut.model_validate(task)


@router.post("/datasets/{dataset_id}/imports/from-dataset", status_code=202)
async def import_dataset(
    dataset_id: str,
    body: ImportFromDataset,
    imports: Imports,
    principal: StandardAuth,
) -> DatasetImportTaskOut:
    """Copy records (of any dataset of the workspace) by id, payload, properties and source."""
    task = await imports.from_dataset(dataset_id, body.dataset_record_ids, _creator(principal))
    return DatasetImportTaskOut.model_validate(task)


@router.post("/datasets/{dataset_id}/imports/from-spans", status_code=202)
async def import_spans(
    dataset_id: str, body: ImportFromSpans, imports: Imports, principal: StandardAuth
) -> DatasetImportTaskOut:
    """Import telemetry spans (by trace and span id) through a mapping of their attributes;
    the spans' GenAI messages make each record's conversation (datasets.span_records). A
    reference not in the workspace is skipped; none found is a 404 `SPAN_NOT_FOUND`."""
    refs = [(r.trace_id, r.span_id) for r in body.span_references]
    mappings = [m.model_dump() for m in body.mapping_contract.mappings]
    task = await imports.from_spans(dataset_id, refs, mappings, _creator(principal))
    return DatasetImportTaskOut.model_validate(task)


@router.get("/datasets/{dataset_id}/tasks")
async def list_tasks(
    dataset_id: str,
    imports: Imports,
    page_size: PageSize = 50,
    page: Page = 1,
) -> DatasetImportTaskList:
    """The dataset's import tasks, newest first."""
    rows, count, nxt, prev = await imports.tasks(
        dataset_id, PageParams(page, page_size, first_page=1)
    )
    results = [DatasetImportTaskOut.model_validate(r) for r in rows]
    page_ = DatasetImportTaskPage(count=count, results=results, next=nxt, previous=prev)
    return DatasetImportTaskList(tasks=page_)


@router.get("/datasets/{dataset_id}/tasks/{task_id}")
async def get_task(dataset_id: str, task_id: str, imports: Imports) -> DatasetImportTaskOut:
    """One import task: its status, progress (percent) and final message."""
    task = await imports.task(dataset_id, task_id)
    return DatasetImportTaskOut.model_validate(task)


@router.get("/datasets/{dataset_id}/exports/to-jsonl")
async def export_jsonl(
    dataset_id: str,
    request: Request,
    datasets: Datasets,
    principal: StandardAuth,
    settings: AppSettings,
    blobs: ReleasingBlobs,
    db: Db,
    secret: SecretKey,
) -> DatasetExport:
    """Export the dataset to a JSONL file of the Files API; `file_url` is a signed link to its
    content (valid 24 hours; the file expires after 7 days)."""
    url = await export_to_jsonl(
        datasets,
        dataset_id,
        key_id=principal.key_id,
        blobs=blobs,
        queue=JobQueue(db),
        base_url=(settings.public_url or str(request.base_url)).rstrip("/"),
        secret=secret,
    )
    return DatasetExport(file_url=url)
