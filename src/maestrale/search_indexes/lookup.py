"""Finding an index of the caller's workspace by name, and a document of it by source id: what
every route of the group (and the retrieval tools) starts with."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.search_indexes.errors import IndexNotReady, SearchIndexNotFound
from maestrale.search_indexes.tables import SearchIndex, SearchIndexDocument

# Statuses of an index that reads and writes of its documents accept.
READY = "ready"


async def index_by_name(
    session: AsyncSession, tenant: Tenant, name: str, *, ready: bool = True
) -> SearchIndex:
    """The index `name` of the tenant's workspace: 404 when there is none (or it is being
    deleted); with `ready`, 409 `index_not_ready` unless it serves (ready, or applying a new
    schema over one it has)."""
    row = (
        await session.execute(
            select(SearchIndex).where(
                SearchIndex.workspace_id == tenant.workspace_id, SearchIndex.name == name
            )
        )
    ).scalar_one_or_none()
    if row is None or row.status == "deleting":
        raise SearchIndexNotFound(f"no search index {name!r}", param="index_name")
    if ready and not serves(row):
        raise IndexNotReady(
            f"the search index {name!r} is {row.status}"
            + (f": {row.status_message}" if row.status_message else ""),
            param="index_name",
        )
    return row


def serves(index: SearchIndex) -> bool:
    """Whether the index answers searches: ready, or applying a new schema over one it has
    (an index applying a new schema keeps serving its current one: the SDK's update)."""
    return index.status == READY or (index.status == "provisioning" and bool(index.pending_schema))


async def document_by_source(
    session: AsyncSession, index: SearchIndex, source_id: str
) -> SearchIndexDocument | None:
    """The document `source_id` of `index` (already the caller's), or None."""
    return (
        await session.execute(
            select(SearchIndexDocument).where(
                SearchIndexDocument.index_id == index.id,
                SearchIndexDocument.workspace_id == index.workspace_id,
                SearchIndexDocument.source_id == source_id,
            )
        )
    ).scalar_one_or_none()
