"""The index and document operations of `/v1/context/search-indexes` (mistralai 3.x
`beta.context.search_indexes`): create, list, get, update and delete an index (202 for the
three that change it, a job finishing the work), ingest and delete documents. Search and
reading are `reading_router`'s; summaries are `summaries`'."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query, Request
from fastapi.responses import JSONResponse

from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.dependencies import Db
from maestrale.core.errors import error_responses
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.worker import Wakeup
from maestrale.core.routing import Work, domain_router
from maestrale.search_indexes import documents
from maestrale.search_indexes import schemas as s
from maestrale.search_indexes.repository import IndexFilter
from maestrale.search_indexes.service import IndexService, index_doc

PREFIX = "/context/search-indexes"
router = domain_router(prefix=PREFIX, tags=["beta.context.search_indexes"])
IndexName = Annotated[str, Path(min_length=1, max_length=s.MAX_NAME)]


def _service(request: Request, work: Work, principal: Principal, db: Db) -> IndexService:
    wakeup: Wakeup = app_services(request).job_wakeup
    return IndexService(
        work.session, Tenant.of(principal), JobQueue(db), work.on_commit, wakeup.ring
    )


@router.post(
    "", status_code=202, response_model=s.ManagedIndexOut, responses=error_responses((409, 422))
)
async def create_index(
    body: s.CreateIndexIn, request: Request, work: Work, principal: StandardAuth, db: Db
) -> JSONResponse:
    """Reserve an index, `provisioning`; poll its `Location` until it is `ready` or `failed`.
    409 `name_taken` when the workspace has an index of the name."""
    creator = principal.user_id or principal.key_id
    row = await _service(request, work, principal, db).create(body, creator)
    location = f"/v1{PREFIX}/{row.name}"
    return JSONResponse(index_doc(row), status_code=202, headers={"Location": location})


@router.get("", response_model=s.ManagedIndexList, responses=error_responses((400, 422)))
async def list_indexes(
    request: Request,
    work: Work,
    principal: StandardAuth,
    db: Db,
    page_size: Annotated[int, Query(ge=1, le=100)] = 20,
    page_token: Annotated[str | None, Query(max_length=1024)] = None,
    name: Annotated[str | None, Query(max_length=s.MAX_NAME)] = None,
    status: s.Status | None = None,
    creator_id: Annotated[str | None, Query(max_length=200)] = None,
) -> JSONResponse:
    """The workspace's indexes, newest first, by cursor (`next_page_token` back as
    `page_token`; null on the last page). Filters: `name` (a substring, any case), `status`,
    `creator_id`."""
    where = IndexFilter(name, status, creator_id)
    rows, token = await _service(request, work, principal, db).page(where, page_size, page_token)
    return JSONResponse({"data": [index_doc(r) for r in rows], "next_page_token": token})


@router.get("/{index_name}", response_model=s.ManagedIndexOut)
async def get_index(
    index_name: IndexName, request: Request, work: Work, principal: StandardAuth, db: Db
) -> JSONResponse:
    row = await _service(request, work, principal, db).get(index_name)
    return JSONResponse(index_doc(row))


@router.put(
    "/{index_name}",
    status_code=202,
    response_model=s.ManagedIndexOut,
    responses=error_responses((409, 422)),
)
async def update_index(
    index_name: IndexName,
    body: s.UpdateIndexIn,
    request: Request,
    work: Work,
    principal: StandardAuth,
    db: Db,
) -> JSONResponse:
    """Give the index its whole new schema, which may only add to the current one (fields
    kept with their types; a field that becomes required has a default): 422 else. The index
    is `provisioning` while a job fills the new defaults in, and serves all along."""
    row = await _service(request, work, principal, db).update(index_name, body.schema_)
    return JSONResponse(index_doc(row), status_code=202)


@router.delete("/{index_name}", status_code=202, response_model=s.DeletedIndexOut)
async def delete_index(
    index_name: IndexName, request: Request, work: Work, principal: StandardAuth, db: Db
) -> JSONResponse:
    """Mark the index `deleting` (a 404 from now on); a job removes its chunks, documents and
    summaries."""
    row = await _service(request, work, principal, db).delete(index_name)
    return JSONResponse({"id": row.id, "name": row.name, "status": row.status}, status_code=202)


@router.post(
    "/{index_name}/documents", response_model=s.IngestOut, responses=error_responses((409, 503))
)
async def ingest_documents(
    index_name: IndexName,
    body: s.IngestIn,
    request: Request,
    work: Work,
    principal: StandardAuth,
) -> JSONResponse:
    """Ingest up to 1,000 documents (400 beyond); each is reported accepted (with its id and
    chunk count) or rejected (with its field errors), and is indexed whole or not at all.
    Re-ingesting a document's id replaces it. 409 unless the index is ready."""
    result = await documents.ingest(
        work, Tenant.of(principal), app_services(request), index_name, body.documents
    )
    return JSONResponse(result)


@router.delete(
    "/{index_name}/documents",
    response_model=s.DeletedDocumentsOut,
    responses=error_responses((409,)),
)
async def delete_documents(
    index_name: IndexName, body: s.DeleteDocumentsIn, work: Work, principal: StandardAuth
) -> JSONResponse:
    """Remove the documents named (by the ids they were ingested with) and their chunks;
    the ids the index does not have are `missing`."""
    result = await documents.delete_documents(
        work.session, Tenant.of(principal), index_name, body.document_ids
    )
    return JSONResponse(result)
