"""Documents: record an upload, list, read, update, delete, reprocess, and their text.

Reading needs the library's Viewer role, writing its Editor role (a document of a library the
caller cannot see is 404). A document whose processing job ended without a result (its worker
died on the last attempt) reads as in error, never as forever in progress.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.files.service import guess_mimetype
from maestrale.libraries.access import EDITOR, VIEWER
from maestrale.libraries.documents import states
from maestrale.libraries.documents.repository import SORTS, DocumentRepository
from maestrale.libraries.documents.schemas import (
    DocumentList,
    DocumentOut,
    DocumentUpdate,
    ProcessingStatusOut,
)
from maestrale.libraries.documents.upload import Received
from maestrale.libraries.errors import DocumentNotFound, InvalidDocumentQuery, LibraryNotFound
from maestrale.libraries.queueing import enqueue_expiry, enqueue_processing
from maestrale.libraries.repository import LibraryRepository
from maestrale.libraries.schemas import PaginationInfo
from maestrale.libraries.service import LibraryService
from maestrale.libraries.tables import Library, LibraryDocument

MAX_EXTENSION_CHARS = 32


def extension_of(filename: str) -> str | None:
    _, dot, tail = filename.rpartition(".")
    tail = tail.lower()
    if not dot or not tail or len(tail) > MAX_EXTENSION_CHARS or not tail.isalnum():
        return None
    return tail


def parse_filters(raw: str | None) -> dict[str, Any]:
    """`filters_attributes`: a JSON object of attribute names to a value or a list of values."""
    if raw is None or not raw.strip():
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidDocumentQuery(
            "filters_attributes must be a JSON object", param="filters_attributes"
        ) from exc
    if not isinstance(value, dict):
        raise InvalidDocumentQuery(
            "filters_attributes must be a JSON object", param="filters_attributes"
        )
    return value


async def remove_document(session: AsyncSession, document: LibraryDocument) -> list[str] | None:
    """Delete the document with its chunks and take it off its library's counters (the
    library's row first, then the document's); its blob keys, or None if it was gone (deleted
    meanwhile by another request or job: nothing is changed then)."""
    from maestrale.libraries.index import delete_document

    libraries = LibraryRepository(session, Tenant(document.organization_id, document.workspace_id))
    await libraries.lock(document.library_id)
    removed = await DocumentRepository(session).delete(document.id)
    if removed is None:
        return None
    size, keys = removed
    await libraries.count_documents(document.library_id, -1, -size)
    await delete_document(session, document.library_id, document.id)
    return keys


class DocumentService:
    def __init__(self, session: AsyncSession, tenant: Tenant, queue: JobQueue) -> None:
        self.session = session
        self.tenant = tenant
        self.queue = queue
        self.libraries = LibraryService(session, tenant)
        self.repo = DocumentRepository(session)

    async def library(self, library_id: str, role: str = VIEWER) -> Library:
        return await self.libraries.library(library_id, role)

    async def document(
        self, library_id: str, document_id: str, role: str = VIEWER
    ) -> LibraryDocument:
        library = await self.library(library_id, role)
        row = await self.repo.get(library.id, document_id)
        if row is None:
            raise DocumentNotFound(document_id)
        return row

    async def shown(self, rows: Sequence[LibraryDocument]) -> list[DocumentOut]:
        """The documents as the API shows them, those whose job ended without a result in
        error."""
        waiting = [r.job_id for r in rows if r.process_status in states.UNFINISHED and r.job_id]
        ended = await self.repo.ended_jobs(waiting) if waiting else {}
        out = []
        for row in rows:
            reason = ended.get(row.job_id or "")
            state = None
            if reason is not None and row.process_status in states.UNFINISHED:
                state = (states.ERROR, states.error_label(f"processing stopped: {reason}"))
            out.append(DocumentOut.of(row, state))
        return out

    async def one(self, row: LibraryDocument) -> DocumentOut:
        return (await self.shown([row]))[0]

    async def page(
        self,
        library_id: str,
        page: PageParams,
        *,
        search: str | None,
        filters_attributes: str | None,
        sort_by: str,
        sort_order: str,
    ) -> DocumentList:
        if sort_by not in SORTS:
            raise InvalidDocumentQuery(
                f"sort_by must be one of {', '.join(sorted(SORTS))}", param="sort_by"
            )
        if sort_order.lower() not in ("asc", "desc"):
            raise InvalidDocumentQuery("sort_order must be asc or desc", param="sort_order")
        library = await self.library(library_id)
        rows, total = await self.repo.page(
            library.id,
            search=search,
            filters=parse_filters(filters_attributes),
            sort_by=sort_by,
            descending=sort_order.lower() == "desc",
            offset=page.offset,
            limit=page.limit,
        )
        return DocumentList(
            pagination=PaginationInfo.of(total, page.page, page.page_size),
            data=await self.shown(rows),
        )

    async def record(
        self, library_id: str, document_id: str, received: Received, text_key: str | None = None
    ) -> LibraryDocument:
        """The document of a stored upload, counted in its library, its processing enqueued;
        `text_key`, the text read during the upload, if any. The caller's role is checked
        again: the upload ran outside any transaction."""
        library = await self.library(library_id, EDITOR)
        if not await self.libraries.repo.count_documents(library.id, 1, received.size):
            raise LibraryNotFound(library_id)
        now = utcnow()
        row = LibraryDocument(
            id=document_id,
            organization_id=library.organization_id,
            workspace_id=library.workspace_id,
            library_id=library.id,
            name=received.filename,
            mime_type=guess_mimetype(received.filename, received.content_type),
            extension=extension_of(received.filename),
            size=received.size,
            hash=received.sha256,
            blob_key=received.key,
            process_status=states.TODO,
            processing_status=states.LABELS[states.TODO],
            generation=1,
            text_key=text_key,
            tokens_processing_total=0,
            uploaded_by_id=self.tenant.user_id or self.tenant.workspace_id,
            uploaded_by_type="User" if self.tenant.user_id else "Workspace",
            created_at=now,
            updated_at=now,
        )
        await self.repo.add(row)
        await enqueue_processing(self.session, self.queue, row)
        await self.repo.flush()
        return row

    async def update(
        self, library_id: str, document_id: str, body: DocumentUpdate
    ) -> LibraryDocument:
        row = await self.document(library_id, document_id, EDITOR)
        sent = body.model_fields_set
        if "name" in sent and body.name is not None:
            row.name = body.name
        if "attributes" in sent:
            row.attributes = body.attributes
        if "expires_at" in sent:
            row.expires_at = body.expires_at
            if body.expires_at is not None:
                await enqueue_expiry(self.session, self.queue, row, body.expires_at)
        row.updated_at = utcnow()
        await self.repo.flush()
        return row

    async def delete(self, library_id: str, document_id: str) -> list[str]:
        """Delete the document; the blob keys to remove once that has committed."""
        row = await self.document(library_id, document_id, EDITOR)
        keys = await remove_document(self.session, row)
        if keys is None:
            raise DocumentNotFound(document_id)
        return keys

    async def reprocess(self, library_id: str, document_id: str) -> None:
        """Process the document again, as a new generation (a running processing's result is
        then discarded)."""
        row = await self.document(library_id, document_id, EDITOR)
        row.generation += 1
        row.process_status = states.TODO
        row.processing_status = states.LABELS[states.TODO]
        row.updated_at = utcnow()
        await self.repo.flush()
        await enqueue_processing(self.session, self.queue, row)
        await self.repo.flush()

    async def status(self, library_id: str, document_id: str) -> ProcessingStatusOut:
        shown = await self.one(await self.document(library_id, document_id))
        return ProcessingStatusOut(
            document_id=shown.id,
            process_status=shown.process_status,
            processing_status=shown.processing_status,
        )
