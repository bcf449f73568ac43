"""The /v1/libraries group (`client.beta.libraries`): libraries, their sharings (`accesses`)
and, from `documents.router`, their documents."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.dependencies import Blobs
from maestrale.core.errors import error_responses
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work, domain_router
from maestrale.libraries.documents.router import router as documents_router
from maestrale.libraries.schemas import (
    LibraryCreate,
    LibraryList,
    LibraryOut,
    LibraryUpdate,
    SharingDeleteIn,
    SharingIn,
    SharingList,
    SharingOut,
)
from maestrale.libraries.service import LibraryService
from maestrale.libraries.sharing import SharingService

router = domain_router(prefix="/libraries", tags=["libraries"])


def _service(work: Work, principal: Principal) -> LibraryService:
    return LibraryService(work.session, Tenant.of(principal))


def _sharing(work: Work, principal: Principal) -> SharingService:
    return SharingService(work.session, Tenant.of(principal))


@router.get("", response_model=LibraryList)
async def list_libraries(
    work: Work,
    principal: StandardAuth,
    page_size: int = 100,
    page_token: Annotated[str | None, Query(max_length=1024)] = None,
    page: int = 0,
    search: Annotated[str | None, Query(max_length=512)] = None,
    filter_owned_by_me: bool | None = None,
) -> LibraryList:
    """The libraries the caller owns or that are shared with it, newest first. Page by
    `page` (from 0, with `pagination`) or by the `next_page_token` of the previous page
    (`page_token`); `search` matches names; `filter_owned_by_me` keeps the caller's own."""
    return await _service(work, principal).page(
        PageParams(0 if page_token else page, page_size),
        page_token=page_token,
        search=search,
        owned_only=bool(filter_owned_by_me),
    )


@router.post("", status_code=201, response_model=LibraryOut)
async def create_library(body: LibraryCreate, work: Work, principal: StandardAuth) -> LibraryOut:
    """Create a library. `owner_type` User (the default for a key of a user) makes it the
    user's alone until shared; Workspace makes it every key of the workspace's."""
    service = _service(work, principal)
    return await service.out(await service.create(body))


@router.get("/{library_id}", response_model=LibraryOut)
async def get_library(library_id: str, work: Work, principal: StandardAuth) -> LibraryOut:
    """A library the caller may read, with its counters."""
    service = _service(work, principal)
    return await service.out(await service.library(library_id))


async def _update(
    library_id: str, body: LibraryUpdate, work: Work, principal: Principal
) -> LibraryOut:
    service = _service(work, principal)
    return await service.out(await service.update(library_id, body))


@router.put("/{library_id}", response_model=LibraryOut, responses=error_responses((403,)))
async def update_library(
    library_id: str, body: LibraryUpdate, work: Work, principal: StandardAuth
) -> LibraryOut:
    """Rename a library or change its description (Editor role; the fields sent)."""
    return await _update(library_id, body, work, principal)


@router.patch("/{library_id}", response_model=LibraryOut, responses=error_responses((403,)))
async def patch_library(
    library_id: str, body: LibraryUpdate, work: Work, principal: StandardAuth
) -> LibraryOut:
    """Rename a library or change its description (Editor role; the fields sent)."""
    return await _update(library_id, body, work, principal)


@router.delete("/{library_id}", response_model=LibraryOut, responses=error_responses((403,)))
async def delete_library(
    library_id: str, work: Work, principal: StandardAuth, blobs: Blobs
) -> LibraryOut:
    """Delete a library with its documents, their chunks and stored content (owner only);
    the library as it was."""
    return await _service(work, principal).delete(library_id, work.on_commit, blobs)


@router.get("/{library_id}/share", response_model=SharingList)
async def list_accesses(library_id: str, work: Work, principal: StandardAuth) -> SharingList:
    """Who has access to the library: its owner (role Owner) first, then its sharings."""
    return await _sharing(work, principal).accesses(library_id)


@router.put("/{library_id}/share", response_model=SharingOut, responses=error_responses((403,)))
async def share_library(
    library_id: str, body: SharingIn, work: Work, principal: StandardAuth
) -> SharingOut:
    """Give a user, a workspace or the organization (`share_with_type` User, Workspace or Org,
    `share_with_uuid` its id) the role `level` (Viewer reads, Editor also writes documents)
    on the library; the owner only. Never outside the library's organization."""
    return await _sharing(work, principal).share(library_id, body)


@router.delete("/{library_id}/share", response_model=SharingOut, responses=error_responses((403,)))
async def unshare_library(
    library_id: str, body: SharingDeleteIn, work: Work, principal: StandardAuth
) -> SharingOut:
    """Remove a sharing of the library (owner only); the sharing as it was."""
    return await _sharing(work, principal).unshare(library_id, body)


router.include_router(documents_router)
