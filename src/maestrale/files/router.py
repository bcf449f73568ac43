"""The /v1/files group: upload (streamed), list, retrieve, delete, download, signed links."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import Query, Request
from fastapi.responses import StreamingResponse
from starlette.requests import ClientDisconnect

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import StandardAuth, standard_principal
from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.blobs import BlobStore
from maestrale.core.dependencies import Blobs, Db, SecretKey
from maestrale.core.errors import BadRequest, error_responses
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work, domain_router
from maestrale.core.sizes import declared_length
from maestrale.files.download import ByteRange, content_disposition
from maestrale.files.schemas import FileDeleted, FileDetailOut, FileList, FileOut, SignedUrl
from maestrale.files.service import FileService, UploadForm, signed_file
from maestrale.files.tables import StoredFile

router = domain_router(prefix="/files", tags=["files"])


# The upload is parsed (streamed) by the route, so its form is declared by hand: the `file` part
# and the fields of `UploadForm`.
_UPLOAD_FORM: dict[str, Any] = {
    "type": "object",
    "required": ["file"],
    "properties": {
        "file": {"type": "string", "format": "binary"},
        **UploadForm.model_json_schema()["properties"],
    },
}
_UPLOAD_OPENAPI = {
    "requestBody": {
        "required": True,
        "content": {"multipart/form-data": {"schema": _UPLOAD_FORM}},
    }
}


def _service(work: Work, principal: Principal, blobs: BlobStore) -> FileService:
    return FileService(work.session, Tenant.of(principal), principal.key_id, blobs)


@router.post(
    "",
    response_model=FileOut,
    openapi_extra=_UPLOAD_OPENAPI,
    responses=error_responses((415, 422)),
)
async def upload_file(
    request: Request,
    work: Work,
    principal: StandardAuth,
    blobs: Blobs,
    db: Db,
    settings: AppSettings,
) -> FileOut:
    """Upload a file (multipart: `file`, and optionally `purpose` — `fine-tune` by default,
    `batch`, `ocr` or any other —, `visibility` — `workspace` or `user` — and `expiry` in hours).

    The body is streamed to blob storage; a file over the upload limit (512 MB by default) is
    refused with 413 and nothing is stored. JSONL files get `num_lines`; `fine-tune` files must
    be `.jsonl` files whose every line is a JSON object (400 names the first bad line)."""
    service = _service(work, principal, blobs)
    length = request.headers.get("content-length")
    try:
        row = await service.upload(
            request.headers.get("content-type"),
            declared_length(length),
            request.stream(),
            max_bytes=settings.max_upload_bytes,
            queue=JobQueue(db),
        )
    except ClientDisconnect as exc:
        raise BadRequest("the client went away during the upload", code="client_gone") from exc
    return FileOut.of(row)


@router.get("", response_model=FileList)
async def list_files(
    work: Work,
    principal: StandardAuth,
    blobs: Blobs,
    page: int = 0,
    page_size: int = 100,
    include_total: bool = True,
    purpose: str | None = None,
    search: Annotated[str | None, Query(max_length=512)] = None,
    sample_type: Annotated[list[str] | None, Query()] = None,
    source: Annotated[list[str] | None, Query()] = None,
    mimetypes: Annotated[list[str] | None, Query()] = None,
) -> FileList:
    """Files of the workspace visible to the caller, newest first (page counted from 0)."""
    rows, total = await _service(work, principal, blobs).page(
        PageParams(page, page_size),
        purpose=purpose,
        sample_types=sample_type or [],
        sources=source or [],
        mimetypes=mimetypes or [],
        search=search,
        with_total=include_total,
    )
    return FileList(data=[FileOut.of(row) for row in rows], total=total)


@router.get("/{file_id}", response_model=FileDetailOut)
async def retrieve_file(
    file_id: str, work: Work, principal: StandardAuth, blobs: Blobs
) -> FileDetailOut:
    """One file's metadata."""
    row = await _service(work, principal, blobs).get(file_id)
    return FileDetailOut(**FileOut.of(row).model_dump())


@router.delete("/{file_id}", response_model=FileDeleted)
async def delete_file(
    file_id: str, work: Work, principal: StandardAuth, blobs: Blobs
) -> FileDeleted:
    """Delete a file and its stored content."""
    await _service(work, principal, blobs).delete(file_id)
    return FileDeleted(id=file_id)


@router.get(
    "/{file_id}/content",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"application/octet-stream": {}}},
        206: {"content": {"application/octet-stream": {}}},
        **error_responses((403, 416)),
    },
)
async def download_file(
    file_id: str,
    request: Request,
    work: Work,
    blobs: Blobs,
    secret: SecretKey,
    expires: str | None = None,
    signature: str | None = None,
) -> StreamingResponse:
    """The file's bytes as `application/octet-stream`, with its name in `Content-Disposition`;
    one HTTP `Range` is honoured (206). With the `expires` and `signature` of a signed link
    (see `/url`) no key is needed; an expired or altered link gets 403."""
    if expires is not None or signature is not None:
        row = await signed_file(work.session, file_id, expires or "", signature or "", secret)
        service = FileService(
            work.session, Tenant(row.organization_id, row.workspace_id), None, blobs
        )
    else:
        principal = await standard_principal(request)
        service = _service(work, principal, blobs)
        row = await service.get(file_id)
    size, byte_range = await service.content(row, request.headers.get("range"))
    return _stream(blobs, row, size, byte_range)


def _stream(
    blobs: BlobStore, row: StoredFile, size: int, byte_range: ByteRange | None
) -> StreamingResponse:
    headers = {
        "Content-Disposition": content_disposition(row.filename),
        "Accept-Ranges": "bytes",
    }
    start, end, status = 0, size, 200
    if byte_range is not None:
        start, end, status = byte_range.start, byte_range.end, 206
        headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
    headers["Content-Length"] = str(end - start)

    async def body() -> AsyncIterator[bytes]:
        async for chunk in blobs.get(row.blob_key, start=start, end=end):
            yield chunk

    return StreamingResponse(
        body(), status_code=status, media_type="application/octet-stream", headers=headers
    )


@router.get("/{file_id}/url", response_model=SignedUrl)
async def get_signed_url(
    file_id: str,
    request: Request,
    work: Work,
    principal: StandardAuth,
    blobs: Blobs,
    settings: AppSettings,
    secret: SecretKey,
    expiry: int = 24,
) -> SignedUrl:
    """A link to the file's content that needs no key, valid `expiry` hours (1 to 168)."""
    base = (settings.public_url or str(request.base_url)).rstrip("/")
    url = await _service(work, principal, blobs).signed_url(file_id, expiry, base, secret)
    return SignedUrl(url=url)
