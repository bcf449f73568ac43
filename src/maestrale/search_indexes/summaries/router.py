"""The summary field routes of mistralai 3.x's context search indexes:
`/v1/context/search-indexes/{index_name}/summary_field/{language}` (GET, POST streaming
`application/x-ndjson`, PUT). Another workspace's index is a 404."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query, Request
from fastapi.responses import StreamingResponse

from maestrale.config.dependencies import AppSettings
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.dependencies import Db
from maestrale.core.errors import error_responses
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.routing import Work, domain_router
from maestrale.engines.dependencies import Engines
from maestrale.search_indexes.summaries.schemas import Language, SummaryOut, SummaryUpdate
from maestrale.search_indexes.summaries.service import SummaryService, summary_model
from maestrale.search_indexes.summaries.stream import MEDIA_TYPE, summary_stream

router = domain_router(prefix="/context/search-indexes", tags=["beta.context.search_indexes"])
PATH = "/{index_name}/summary_field/{language}"
IndexName = Annotated[str, Path(min_length=1, max_length=512)]


def _service(work: Work, tenant: CurrentTenant, db: Db) -> SummaryService:
    return SummaryService(work.session, tenant, JobQueue(db))


@router.get(PATH, response_model=SummaryOut, responses=error_responses((404, 409, 422)))
async def get_summary(
    index_name: IndexName, language: Language, work: Work, tenant: CurrentTenant, db: Db
) -> SummaryOut:
    """The index's summary field in `language`; 404 `summary_not_found` while it has none."""
    return await _service(work, tenant, db).read(index_name, language)


@router.post(
    PATH,
    response_class=StreamingResponse,
    responses={
        200: {"content": {MEDIA_TYPE: {}}, "description": "SummaryMetadata, then SummaryChunk"},
        **error_responses((400, 404, 409, 422)),
    },
)
async def generate_summary(
    index_name: IndexName,
    language: Language,
    request: Request,
    work: Work,
    tenant: CurrentTenant,
    db: Db,
    settings: AppSettings,
    engines: Engines,
    force: Annotated[bool, Query()] = False,
) -> StreamingResponse:
    """Stream the index's summary in `language` (JSON lines: its metadata, then its content in
    pieces, or an error): the one stored, unless `force`, else a generation by the chat model
    (`search_index_summary_model`) from a sample of the index's chunks, run as a job that goes
    on if the client leaves. One generation of a language runs at a time: a second request
    follows the first's."""
    plan = await _service(work, tenant, db).generate(
        index_name,
        language,
        force=force,
        model=lambda: summary_model(engines, settings.search_index_summary_model),
    )
    if plan.started:
        work.on_commit(app_services(request).job_wakeup.ring)
    return summary_stream(db, plan)


@router.put(PATH, response_model=SummaryOut, responses=error_responses((404, 409, 422)))
async def set_summary(
    index_name: IndexName,
    language: Language,
    body: SummaryUpdate,
    work: Work,
    tenant: CurrentTenant,
    db: Db,
) -> SummaryOut:
    """Write the index's summary in `language` by hand (`handwritten`), or confirm a
    generated one (`generated_confirmed`); at most 64 KiB."""
    return await _service(work, tenant, db).write(index_name, language, body)
