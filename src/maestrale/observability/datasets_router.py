"""Datasets and dataset records (beta observability)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from maestrale.core.auth.dependencies import CurrentTenant, StandardAuth
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.routing import DbSession
from maestrale.observability.campaigns_service import CampaignRepository, CampaignService
from maestrale.observability.datasets_import import import_from_campaign
from maestrale.observability.datasets_schemas import (
    DatasetCreate,
    DatasetImportTaskOut,
    DatasetList,
    DatasetOut,
    DatasetPage,
    DatasetUpdate,
    ImportFromCampaign,
    RecordCreate,
    RecordList,
    RecordOut,
    RecordPage,
    RecordPayload,
    RecordProperties,
    RecordsBulkDelete,
)
from maestrale.observability.datasets_service import (
    DatasetRepository,
    DatasetService,
    RecordRepository,
)
from maestrale.observability.errors import observability_router

router = observability_router(prefix="/observability", tags=["observability"])

PageSize = Annotated[int, Query()]
Page = Annotated[int, Query()]


def _service(session: DbSession, tenant: CurrentTenant) -> DatasetService:
    return DatasetService(DatasetRepository(session, tenant), RecordRepository(session, tenant))


@router.get("/datasets")
async def list_datasets(
    session: DbSession,
    tenant: CurrentTenant,
    page_size: PageSize = 50,
    page: Page = 1,
    q: Annotated[str | None, Query()] = None,
) -> DatasetList:
    rows, count, nxt, prev = await _service(session, tenant).list_datasets(
        PageParams(page, page_size, first_page=1), q
    )
    results = [DatasetOut.model_validate(r) for r in rows]
    return DatasetList(datasets=DatasetPage(count=count, results=results, next=nxt, previous=prev))


@router.post("/datasets", status_code=201)
async def create_dataset(
    body: DatasetCreate, session: DbSession, tenant: CurrentTenant, principal: StandardAuth
) -> DatasetOut:
    owner = principal.user_id or principal.key_id
    row = await _service(session, tenant).create(body.name, body.description, owner)
    return DatasetOut.model_validate(row)


@router.get("/datasets/{dataset_id}")
async def get_dataset(dataset_id: str, session: DbSession, tenant: CurrentTenant) -> DatasetOut:
    return DatasetOut.model_validate(await _service(session, tenant).get(dataset_id))


@router.patch("/datasets/{dataset_id}")
async def update_dataset(
    dataset_id: str, body: DatasetUpdate, session: DbSession, tenant: CurrentTenant
) -> DatasetOut:
    row = await _service(session, tenant).update(dataset_id, body.name, body.description)
    return DatasetOut.model_validate(row)


@router.delete("/datasets/{dataset_id}", status_code=204)
async def delete_dataset(dataset_id: str, session: DbSession, tenant: CurrentTenant) -> Response:
    await _service(session, tenant).delete(dataset_id)
    return Response(status_code=204)


@router.get("/datasets/{dataset_id}/records")
async def list_records(
    dataset_id: str,
    session: DbSession,
    tenant: CurrentTenant,
    page_size: PageSize = 50,
    page: Page = 1,
) -> RecordList:
    rows, count, nxt, prev = await _service(session, tenant).list_records(
        dataset_id, PageParams(page, page_size, first_page=1)
    )
    results = [RecordOut.model_validate(r) for r in rows]
    return RecordList(records=RecordPage(count=count, results=results, next=nxt, previous=prev))


@router.post("/datasets/{dataset_id}/records", status_code=201)
async def create_record(
    dataset_id: str, body: RecordCreate, session: DbSession, tenant: CurrentTenant
) -> RecordOut:
    row = await _service(session, tenant).add_record(dataset_id, body.payload, body.properties)
    return RecordOut.model_validate(row)


@router.post("/dataset-records/bulk-delete", status_code=204)
async def bulk_delete_records(
    body: RecordsBulkDelete, session: DbSession, tenant: CurrentTenant
) -> Response:
    await _service(session, tenant).delete_records(body.dataset_record_ids)
    return Response(status_code=204)


@router.get("/dataset-records/{dataset_record_id}")
async def get_record(
    dataset_record_id: str, session: DbSession, tenant: CurrentTenant
) -> RecordOut:
    return RecordOut.model_validate(await _service(session, tenant).record(dataset_record_id))


@router.delete("/dataset-records/{dataset_record_id}", status_code=204)
async def delete_record(
    dataset_record_id: str, session: DbSession, tenant: CurrentTenant
) -> Response:
    await _service(session, tenant).delete_records([dataset_record_id])
    return Response(status_code=204)


@router.put("/dataset-records/{dataset_record_id}/payload", status_code=204)
async def replace_payload(
    dataset_record_id: str, body: RecordPayload, session: DbSession, tenant: CurrentTenant
) -> Response:
    await _service(session, tenant).replace_payload(dataset_record_id, body.payload)
    return Response(status_code=204)


@router.put("/dataset-records/{dataset_record_id}/properties", status_code=204)
async def replace_properties(
    dataset_record_id: str, body: RecordProperties, session: DbSession, tenant: CurrentTenant
) -> Response:
    await _service(session, tenant).replace_properties(dataset_record_id, body.properties)
    return Response(status_code=204)


@router.post("/datasets/{dataset_id}/imports/from-campaign", status_code=202)
async def import_campaign(
    dataset_id: str,
    body: ImportFromCampaign,
    request: Request,
    session: DbSession,
    tenant: CurrentTenant,
    principal: StandardAuth,
) -> DatasetImportTaskOut:
    campaigns = CampaignService(CampaignRepository(session, tenant), JobQueue(request.app.state.db))
    task = await import_from_campaign(
        _service(session, tenant),
        campaigns,
        tenant,
        dataset_id,
        body.campaign_id,
        principal.user_id or principal.key_id,
    )
    return DatasetImportTaskOut.model_validate(task)
