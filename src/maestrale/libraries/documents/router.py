"""The documents of a library (`client.beta.libraries.documents`), and the two contents their
signed links open."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.requests import ClientDisconnect

from maestrale.config import Settings
from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import StandardAuth, standard_principal
from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.db import Database
from maestrale.core.dependencies import Blobs, Db, ReleasingBlobs, SecretKey
from maestrale.core.errors import BadRequest, error_responses
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work, domain_router
from maestrale.core.sizes import declared_length
from maestrale.files.download import content_disposition
from maestrale.libraries.access import EDITOR
from maestrale.libraries.documents import links, text
from maestrale.libraries.documents.early_text import read_at_upload, upload_text_key
from maestrale.libraries.documents.schemas import (
    DocumentList,
    DocumentOut,
    DocumentUpdate,
    ProcessingStatusOut,
    TextContentOut,
)
from maestrale.libraries.documents.service import DocumentService
from maestrale.libraries.documents.upload import receive
from maestrale.libraries.errors import DocumentNotFound
from maestrale.libraries.service import blob_remover
from maestrale.libraries.tables import LibraryDocument

router = domain_router()

_DOCUMENT = "/{library_id}/documents/{document_id}"
_UPLOAD_OPENAPI = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {"file": {"type": "string", "format": "binary"}},
                }
            }
        },
    }
}
# Neither content is ever rendered by a browser as a page of this origin.
_SAFE_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "private, no-store"}
_SIGNED_RESPONSES: dict[int | str, dict[str, Any]] = {**error_responses((403, 409))}


def _service(work: Work, principal: Principal, db: Database) -> DocumentService:
    return DocumentService(work.session, Tenant.of(principal), JobQueue(db))


def _base_url(request: Request, settings: Settings) -> str:
    return (settings.public_url or str(request.base_url)).rstrip("/")


@router.get("/{library_id}/documents", response_model=DocumentList)
async def list_documents(
    library_id: str,
    work: Work,
    principal: StandardAuth,
    db: Db,
    search: Annotated[str | None, Query(max_length=512)] = None,
    page_size: int = 100,
    page: int = 0,
    filters_attributes: Annotated[str | None, Query(max_length=8192)] = None,
    sort_by: str = "created_at",
    sort_order: str = "desc",
) -> DocumentList:
    """The library's documents (page counted from 0). `search` matches their names;
    `filters_attributes` is a JSON object of attribute names to a value (or a list of values,
    any of which matches); `sort_by` is created_at, updated_at, last_processed_at, name or
    size, `sort_order` asc or desc."""
    return await _service(work, principal, db).page(
        library_id,
        PageParams(page, page_size),
        search=search,
        filters_attributes=filters_attributes,
        sort_by=sort_by,
        sort_order=sort_order,
    )


@router.post(
    "/{library_id}/documents",
    status_code=201,
    response_model=DocumentOut,
    openapi_extra=_UPLOAD_OPENAPI,
    responses=error_responses((403, 413, 415)),
)
async def upload_document(
    library_id: str,
    request: Request,
    work: Work,
    principal: StandardAuth,
    db: Db,
    blobs: Blobs,
    settings: AppSettings,
) -> DocumentOut:
    """Upload a document (multipart, its `file` part) into the library; it is then processed
    in the background (`process_status` todo, in_progress, then done or error). Needs the
    Editor role. The body is streamed to storage, no transaction open meanwhile; a document
    over the limit (`library_max_document_bytes`) is refused with 413 and nothing is kept.
    The text of a text, Markdown, HTML or JSON document up to `library_upload_text_max_bytes`
    (1 MiB) is read during the upload: `text_content` answers at once; other documents have
    their text once processed."""
    service = _service(work, principal, db)
    library = await service.library(library_id, EDITOR)
    document_id = new_id()
    key = text.original_key(library.workspace_id, library.id, document_id)
    # Ended here, not by the blob store: the client's body is a wait of its own, read before
    # any of it reaches the store.
    await work.release()
    length = request.headers.get("content-length")
    try:
        received = await receive(
            blobs,
            key,
            request.headers.get("content-type"),
            declared_length(length),
            request.stream(),
            max_bytes=settings.library_max_document_bytes,
        )
    except ClientDisconnect as exc:
        raise BadRequest("the client went away during the upload", code="client_gone") from exc
    try:
        text_key = await read_at_upload(
            blobs, settings, library.workspace_id, library.id, document_id, received
        )
        row = await service.record(library.id, document_id, received, text_key)
    except BaseException:
        await blobs.delete(key)
        await blobs.delete(upload_text_key(library.workspace_id, library.id, document_id))
        raise
    return await service.one(row)


@router.get(_DOCUMENT, response_model=DocumentOut)
async def get_document(
    library_id: str, document_id: str, work: Work, principal: StandardAuth, db: Db
) -> DocumentOut:
    """A document's metadata and processing state."""
    service = _service(work, principal, db)
    return await service.one(await service.document(library_id, document_id))


async def _update(
    library_id: str,
    document_id: str,
    body: DocumentUpdate,
    db: Database,
    work: Work,
    principal: Principal,
) -> DocumentOut:
    service = _service(work, principal, db)
    return await service.one(await service.update(library_id, document_id, body))


@router.put(_DOCUMENT, response_model=DocumentOut, responses=error_responses((403,)))
async def update_document(
    library_id: str,
    document_id: str,
    body: DocumentUpdate,
    db: Db,
    work: Work,
    principal: StandardAuth,
) -> DocumentOut:
    """Change a document's name, attributes or expiry (the fields sent; Editor role). A
    document is deleted once its `expires_at` passes."""
    return await _update(library_id, document_id, body, db, work, principal)


@router.patch(_DOCUMENT, response_model=DocumentOut, responses=error_responses((403,)))
async def patch_document(
    library_id: str,
    document_id: str,
    body: DocumentUpdate,
    db: Db,
    work: Work,
    principal: StandardAuth,
) -> DocumentOut:
    """Change a document's name, attributes or expiry (the fields sent; Editor role)."""
    return await _update(library_id, document_id, body, db, work, principal)


@router.delete(_DOCUMENT, status_code=204, responses=error_responses((403,)))
async def delete_document(
    library_id: str,
    document_id: str,
    work: Work,
    principal: StandardAuth,
    db: Db,
    blobs: Blobs,
) -> Response:
    """Delete a document with its chunks and stored content (Editor role)."""
    keys = await _service(work, principal, db).delete(library_id, document_id)
    work.on_commit(lambda: blob_remover(blobs, keys))
    return Response(status_code=204)


@router.get(f"{_DOCUMENT}/status", response_model=ProcessingStatusOut)
async def document_status(
    library_id: str, document_id: str, work: Work, principal: StandardAuth, db: Db
) -> ProcessingStatusOut:
    """A document's processing state; an error's reason is in `processing_status`."""
    return await _service(work, principal, db).status(library_id, document_id)


@router.get(
    f"{_DOCUMENT}/text_content", response_model=TextContentOut, responses=error_responses((409,))
)
async def document_text(
    library_id: str,
    document_id: str,
    work: Work,
    principal: StandardAuth,
    db: Db,
    blobs: ReleasingBlobs,
    page_start: int | None = None,
    page_end: int | None = None,
) -> TextContentOut:
    """The text read from a processed document, whole or pages `page_start` to `page_end`
    (numbered from 1, both included), pages separated by a blank line. 409 while it is not
    processed."""
    row = await _service(work, principal, db).document(library_id, document_id)
    pages = await text.load_pages(blobs, row)
    return TextContentOut(text=text.page_range(pages, page_start, page_end))


async def _signed_url(
    request: Request,
    service: DocumentService,
    settings: Settings,
    secret: bytes,
    content: links.Content,
    library_id: str,
    document_id: str,
) -> str:
    row = await service.document(library_id, document_id)
    if content == "extracted-text":
        text.check_processed(row)
    return links.signed_url(
        _base_url(request, settings),
        secret,
        content,
        row.library_id,
        row.id,
        settings.library_signed_url_seconds,
    )


@router.get(f"{_DOCUMENT}/signed-url", response_model=str)
async def document_signed_url(
    library_id: str,
    document_id: str,
    request: Request,
    work: Work,
    principal: StandardAuth,
    db: Db,
    settings: AppSettings,
    secret: SecretKey,
) -> str:
    """A link to the document's original content that needs no key, valid for
    `library_signed_url_seconds` (an hour by default)."""
    service = _service(work, principal, db)
    return await _signed_url(request, service, settings, secret, "content", library_id, document_id)


@router.get(
    f"{_DOCUMENT}/extracted-text-signed-url",
    response_model=str,
    responses=error_responses((409,)),
)
async def document_text_signed_url(
    library_id: str,
    document_id: str,
    request: Request,
    work: Work,
    principal: StandardAuth,
    db: Db,
    settings: AppSettings,
    secret: SecretKey,
) -> str:
    """A link to the document's extracted text (plain text) that needs no key, valid for
    `library_signed_url_seconds`. 409 while the document is not processed."""
    service = _service(work, principal, db)
    return await _signed_url(
        request, service, settings, secret, "extracted-text", library_id, document_id
    )


@router.post(f"{_DOCUMENT}/reprocess", status_code=204, responses=error_responses((403,)))
async def reprocess_document(
    library_id: str, document_id: str, work: Work, principal: StandardAuth, db: Db
) -> Response:
    """Process the document again (Editor role); a processing under way is superseded."""
    await _service(work, principal, db).reprocess(library_id, document_id)
    return Response(status_code=204)


async def _opened(
    request: Request,
    work: Work,
    db: Database,
    secret: bytes,
    content: links.Content,
    library_id: str,
    document_id: str,
    expires: str | None,
    signature: str | None,
) -> LibraryDocument:
    """The document a request for one of its contents opens: by signed link, or by key."""
    if expires is not None or signature is not None:
        return await links.signed_document(
            work.session, secret, content, library_id, document_id, expires or "", signature or ""
        )
    principal = await standard_principal(request)
    return await _service(work, principal, db).document(library_id, document_id)


@router.get(
    f"{_DOCUMENT}/content",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": {}}}, **_SIGNED_RESPONSES},
)
async def document_content(
    library_id: str,
    document_id: str,
    request: Request,
    work: Work,
    db: Db,
    blobs: ReleasingBlobs,
    secret: SecretKey,
    expires: str | None = None,
    signature: str | None = None,
) -> StreamingResponse:
    """The document's original bytes (`application/octet-stream`, its name in
    `Content-Disposition`). With the `expires` and `signature` of a signed link no key is
    needed; an altered or expired link gets 403."""
    row = await _opened(
        request, work, db, secret, "content", library_id, document_id, expires, signature
    )
    size = await blobs.size(row.blob_key)
    if size is None:
        raise DocumentNotFound(document_id)

    async def body() -> AsyncIterator[bytes]:
        async for chunk in blobs.get(row.blob_key):
            yield chunk

    headers = {
        **_SAFE_HEADERS,
        "Content-Disposition": content_disposition(row.name),
        "Content-Length": str(size),
    }
    return StreamingResponse(body(), media_type="application/octet-stream", headers=headers)


@router.get(
    f"{_DOCUMENT}/extracted-text",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}}, **_SIGNED_RESPONSES},
)
async def document_extracted_text(
    library_id: str,
    document_id: str,
    request: Request,
    work: Work,
    db: Db,
    blobs: ReleasingBlobs,
    secret: SecretKey,
    expires: str | None = None,
    signature: str | None = None,
) -> Response:
    """The text read from the document, as plain text (pages separated by a blank line). With
    the `expires` and `signature` of a signed link no key is needed."""
    row = await _opened(
        request,
        work,
        db,
        secret,
        "extracted-text",
        library_id,
        document_id,
        expires,
        signature,
    )
    pages = await text.load_pages(blobs, row)
    return Response(
        text.page_range(pages, None, None),
        media_type="text/plain; charset=utf-8",
        headers=_SAFE_HEADERS,
    )
