"""Search indexes as sources of the retrieval tools: the `document_library` tool and the
Responses API's `file_search` (whose `vector_store_ids` become its `library_ids`) search an
index when an id they name is no library of the workspace but the id, or the name, of a
serving search index of it.

An index's chunks are in the libraries' store under its id, so the search is the libraries'
(`libraries.index.search`) over `[index id]`; the query is embedded by the index's own
embeddings model (with no session open), and an index of caller-given ("custom") vectors is
searched by keywords only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.libraries.index.store import ID_LENGTH, storable
from maestrale.search_indexes.lookup import serves
from maestrale.search_indexes.tables import SearchIndex, SearchIndexDocument

if TYPE_CHECKING:
    from maestrale.libraries.ingest.embedding import EngineServices

# An index's name is at most this long (longer refs are no index's name).
NAME_LENGTH = 128


@dataclass(frozen=True, slots=True)
class IndexSource:
    """A search index a tool searches: its id, and the catalog id of its embeddings model
    (None: the caller gives the vectors; keywords only)."""

    id: str
    embedding_model: str | None


@dataclass(frozen=True, slots=True)
class Searched:
    """One search of a tool: over `library_ids` (libraries, or indexes), with the query's
    `vector` by `model` (None: keywords only)."""

    library_ids: list[str]
    vector: Any
    model: str


async def index_sources(
    session: AsyncSession, tenant: Tenant, refs: Sequence[str]
) -> dict[str, IndexSource]:
    """`{ref: index}` for those of `refs` that are the id or the name of a serving search index
    of the tenant's workspace (the others are left out)."""
    ids = [r for r in refs if storable(r, ID_LENGTH)]
    names = [r for r in refs if storable(r, NAME_LENGTH)]
    if not ids and not names:
        return {}
    rows = await session.execute(
        select(SearchIndex).where(
            SearchIndex.workspace_id == tenant.workspace_id,
            or_(SearchIndex.id.in_(ids), SearchIndex.name.in_(names)),
        )
    )
    found: dict[str, IndexSource] = {}
    for index in rows.scalars():
        if not serves(index):
            continue
        source = IndexSource(index.id, index.embedding_model)
        for ref in (index.id, index.name):
            if ref in refs:
                found.setdefault(ref, source)
    return found


async def index_searches(
    services: EngineServices, sources: Sequence[IndexSource], query: str
) -> list[Searched]:
    """The searches of `query` over these indexes: one per embeddings model (the query
    embedded once by each), one by keywords for the indexes of custom vectors. Call it with no
    session open."""
    from maestrale.libraries.ingest.embedding import embed_query  # numpy: on first use

    by_model: dict[str | None, list[str]] = {}
    for source in dict.fromkeys(sources):
        by_model.setdefault(source.embedding_model, []).append(source.id)
    searches: list[Searched] = []
    for model_name, index_ids in by_model.items():
        if model_name is None:
            searches.append(Searched(index_ids, None, ""))
            continue
        vector, model, _ = await embed_query(services, query, model_name=model_name)
        searches.append(Searched(index_ids, vector, model))
    return searches


async def source_names(
    session: AsyncSession, tenant: Tenant, document_ids: Sequence[str]
) -> dict[str, str]:
    """`{document id: source id}` of those of `document_ids` that are documents of the
    tenant's search indexes: what a passage found in an index is cited by."""
    wanted = list(dict.fromkeys(i for i in document_ids if storable(i, ID_LENGTH)))
    if not wanted:
        return {}
    found = await session.execute(
        select(SearchIndexDocument.id, SearchIndexDocument.source_id).where(
            SearchIndexDocument.workspace_id == tenant.workspace_id,
            SearchIndexDocument.id.in_(wanted),
        )
    )
    return {document_id: source for document_id, source in found.all()}
