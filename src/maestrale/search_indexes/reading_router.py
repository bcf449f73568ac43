"""The retrieval routes of a context search index (`/v1/context/search-indexes/{index_name}`):
`search`, `navigate`, `read`, `grep` and one chunk by id. Each starts with the index of the
caller's workspace (404 unknown, 409 not ready); a search whose query must be embedded ends
its transaction first, embeds with no session open, then ranks in a new one."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Request
from fastapi.responses import JSONResponse

from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import error_responses
from maestrale.core.routing import Work, domain_router
from maestrale.search_indexes.lookup import index_by_name
from maestrale.search_indexes.retrieval import grep as grep_matching
from maestrale.search_indexes.retrieval import reading, search
from maestrale.search_indexes.retrieval import schemas as s
from maestrale.search_indexes.retrieval.chunks import ChunkReader, ContextChunk, IndexView

router = domain_router(prefix="/context/search-indexes", tags=["beta.context.search_indexes"])
IndexName = Annotated[str, Path(max_length=128)]
ChunkId = Annotated[str, Path(max_length=40)]
ERRORS = error_responses((400, 404, 409, 422))


async def _index(work: Work, principal: StandardAuth, name: str) -> IndexView:
    found = await index_by_name(work.session, Tenant.of(principal), name)
    return IndexView.of(found)


def _chunks(chunks: list[ContextChunk], content_type: str = "content") -> JSONResponse:
    return JSONResponse({"chunks": [chunk.wire(content_type) for chunk in chunks]})


@router.post("/{index_name}/search", response_model=s.SearchResponseOut, responses=ERRORS)
async def search_index(
    index_name: IndexName,
    body: s.SearchRequest,
    work: Work,
    principal: StandardAuth,
    request: Request,
) -> JSONResponse:
    """Search the index: nearest neighbours (`query`, embedded by the index's model, or
    `query_embedding`), keywords, or their reciprocal rank fusion (`rrf`); filtered by
    `filter` over the chunks' system, custom, metadata (`metadata.<key>`) and document
    fields. Hits best first."""
    index = await _index(work, principal, index_name)
    checked = search.plan(body.retriever, index)
    pending = [leaf for leaf in checked.leaves if leaf.embed is not None]
    if pending:
        from maestrale.libraries.ingest.embedding import embed_query  # numpy: on first use

        await work.release()
        services = app_services(request)
        for leaf in pending:
            vector, _, _ = await embed_query(
                services, leaf.embed or "", model_name=index.embedding_model
            )
            leaf.vector = search.query_vector(vector, index, "retriever.query")
    hits = await search.run(work.session, index, checked)
    return JSONResponse({"hits": [search.hit_doc(hit, index) for hit in hits]})


@router.post("/{index_name}/navigate", response_model=s.NavigationResponseOut, responses=ERRORS)
async def navigate(
    index_name: IndexName, body: s.NavigateRequest, work: Work, principal: StandardAuth
) -> JSONResponse:
    """The chunks after (`next`: starting at or after end_offset) or before (`previous`:
    ending at or before start_offset, the nearest) a span of a source, in reading order."""
    index = await _index(work, principal, index_name)
    reading.check(index, body.top_k, body.content_type)
    reader = ChunkReader(work.session, index)
    found = await reading.navigate(
        reader, body.source_id, body.start_offset, body.end_offset, body.direction, body.top_k
    )
    return _chunks(found, body.content_type)


@router.post("/{index_name}/read", response_model=s.NavigationResponseOut, responses=ERRORS)
async def read(
    index_name: IndexName, body: s.ReadRequest, work: Work, principal: StandardAuth
) -> JSONResponse:
    """The chunks of a source lying within [start_offset, end_offset), either bound open."""
    index = await _index(work, principal, index_name)
    reading.check(index, body.top_k, body.content_type)
    reader = ChunkReader(work.session, index)
    found = await reading.read(
        reader, body.source_id, body.start_offset, body.end_offset, body.top_k
    )
    return _chunks(found, body.content_type)


@router.post("/{index_name}/grep", response_model=s.NavigationResponseOut, responses=ERRORS)
async def grep(
    index_name: IndexName,
    body: s.GrepRequest,
    work: Work,
    principal: StandardAuth,
    request: Request,
) -> JSONResponse:
    """The chunks of a source holding `pattern` (`phrase`, `term`, or `regex`: RE2), in
    reading order."""
    index = await _index(work, principal, index_name)
    reading.check(index, body.top_k, body.content_type)
    budget = app_services(request).settings.observability_search_timeout
    matcher = grep_matching.matcher(body.pattern, body.mode, budget)
    reader = ChunkReader(work.session, index)
    found = await reading.grep(reader, body.source_id, matcher, body.top_k, body.content_type)
    return _chunks(found, body.content_type)


@router.get(
    "/{index_name}/chunks/{chunk_id}",
    response_model=s.NavigationResponseOut,
    responses=error_responses((400, 404, 409)),
)
async def get_chunk(
    index_name: IndexName, chunk_id: ChunkId, work: Work, principal: StandardAuth
) -> JSONResponse:
    """One chunk of the index by its id."""
    index = await _index(work, principal, index_name)
    found = await reading.chunk(ChunkReader(work.session, index), chunk_id)
    return _chunks([found])
