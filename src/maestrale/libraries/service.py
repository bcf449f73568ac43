"""Libraries: create, list, read, update and delete, with the caller's role checked on each.

Deleting a library removes its documents' chunks in the same transaction and their blobs once
it has committed (`on_commit`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.blobs import BlobStore
from maestrale.core.clock import as_utc, utcnow
from maestrale.core.errors import BadRequest
from maestrale.core.ids import new_id
from maestrale.core.pagination import PageParams, decode_cursor, encode_cursor
from maestrale.core.uow import AfterCommit
from maestrale.libraries.access import EDITOR, OWNER, RANK, USER, WORKSPACE
from maestrale.libraries.errors import LibraryForbidden, LibraryNotFound
from maestrale.libraries.repository import LibraryRepository
from maestrale.libraries.schemas import (
    LibraryCreate,
    LibraryList,
    LibraryOut,
    LibraryUpdate,
    PaginationInfo,
)
from maestrale.libraries.tables import Library

log = logging.getLogger("maestrale.libraries")

OnCommit = Callable[[AfterCommit], None]

_ACTIONS = {EDITOR: "change", OWNER: "share or delete"}


def _invalid_token() -> BadRequest:
    return BadRequest("invalid page_token", code="invalid_page_token", param="page_token")


def decode_page_token(token: str) -> tuple[datetime, str]:
    """The (created_at, id) a page token continues after; 400 for anything else."""
    if len(token) > 1024:
        raise _invalid_token()
    try:
        values = decode_cursor(token)
    except BadRequest as exc:
        raise _invalid_token() from exc
    stamp, last_id = values.get("t"), values.get("i")
    if not isinstance(stamp, str) or not isinstance(last_id, str):
        raise _invalid_token()
    try:
        return as_utc(datetime.fromisoformat(stamp)), last_id
    except (ValueError, OverflowError) as exc:
        raise _invalid_token() from exc


async def blob_remover(blobs: BlobStore, keys: list[str]) -> None:
    """Remove blobs nothing points to any more (after the commit that dropped their rows); a
    blob left behind is harmless, so a failure is only logged."""
    for key in keys:
        try:
            await blobs.delete(key)
        except Exception:
            log.warning("could not remove the blob %s", key, exc_info=True)


class LibraryService:
    def __init__(self, session: AsyncSession, tenant: Tenant) -> None:
        self.session = session
        self.tenant = tenant
        self.repo = LibraryRepository(session, tenant)

    async def library(self, library_id: str, role: str | None = None) -> Library:
        """A library the caller may read; with `role`, one it has at least that role on (403
        when it sees the library but lacks the role)."""
        row = await self.repo.get(library_id)
        if row is None:
            raise LibraryNotFound(library_id)
        if role is not None:
            have = await self.repo.role(row)
            if RANK.get(have or "", 0) < RANK[role]:
                raise LibraryForbidden(
                    f"your access to library {row.id} ({have}) does not allow you to "
                    f"{_ACTIONS.get(role, 'change')} it",
                )
        return row

    async def out(self, row: Library) -> LibraryOut:
        sharings = await self.repo.sharings([row.id])
        return LibraryOut.of(row, sharings.get(row.id, []))

    async def create(self, body: LibraryCreate) -> Library:
        owner_type = body.owner_type or (USER if self.tenant.user_id else WORKSPACE)
        if owner_type == USER and self.tenant.user_id is None:
            raise BadRequest(
                "a library of owner_type User belongs to a user: this key has none; create it "
                "with owner_type Workspace or with a user's key",
                code="invalid_owner_type",
                param="owner_type",
            )
        owner_id = self.tenant.user_id if owner_type == USER else self.tenant.workspace_id
        assert owner_id is not None
        now = utcnow()
        row = Library(
            id=new_id(),
            organization_id=self.tenant.organization_id,
            workspace_id=self.tenant.workspace_id,
            name=body.name,
            description=body.description,
            chunk_size=body.chunk_size,
            owner_type=owner_type,
            owner_id=owner_id,
            creator_id=self.tenant.user_id,
            nb_documents=0,
            total_size=0,
            created_at=now,
            updated_at=now,
        )
        return await self.repo.add(row)

    async def page(
        self,
        page: PageParams,
        *,
        page_token: str | None,
        search: str | None,
        owned_only: bool,
    ) -> LibraryList:
        after = decode_page_token(page_token) if page_token else None
        rows, total, more = await self.repo.page(
            search=search,
            owned_only=owned_only,
            offset=page.offset,
            limit=page.limit,
            after=after,
            with_total=after is None,
        )
        sharings = await self.repo.sharings([row.id for row in rows])
        token = (
            encode_cursor({"t": rows[-1].created_at.isoformat(), "i": rows[-1].id})
            if more and rows
            else None
        )
        return LibraryList(
            data=[LibraryOut.of(row, sharings.get(row.id, [])) for row in rows],
            pagination=None
            if total is None
            else PaginationInfo.of(total, page.page, page.page_size),
            next_page_token=token,
        )

    async def update(self, library_id: str, body: LibraryUpdate) -> Library:
        row = await self.library(library_id, EDITOR)
        sent = body.model_fields_set
        if "name" in sent and body.name is not None:
            row.name = body.name
        if "description" in sent:
            row.description = body.description
        row.updated_at = utcnow()
        await self.repo.flush()
        return row

    async def delete(self, library_id: str, on_commit: OnCommit, blobs: BlobStore) -> LibraryOut:
        """Delete the library with its documents, chunks and sharings; the blobs go once the
        deletion has committed. Returns the library as it was."""
        from maestrale.libraries.index import delete_library

        row = await self.library(library_id, OWNER)
        shown = await self.out(row)
        keys = await self.repo.delete(row)
        await delete_library(self.session, row.id)
        on_commit(lambda: blob_remover(blobs, keys))
        return shown
