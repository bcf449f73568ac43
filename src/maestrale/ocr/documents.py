"""The document of an OCR request as bytes: fetched from its URL (SSRF-safe, size and time
limited), decoded from a data URL, or read from an uploaded file of the caller's workspace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from maestrale.core.blobs import BlobStore
from maestrale.core.errors import BadRequest, PayloadTooLarge
from maestrale.core.fetch import FetchPolicy, fetch_url
from maestrale.core.uow import Release
from maestrale.files.service import FileService
from maestrale.ocr.schemas import DocumentURLChunk, FileChunk, OCRRequest

Kind = Literal["pdf", "image"]

# Magic numbers of the image formats Pillow reads and OCR makes sense on.
_IMAGE_MAGIC = (
    b"\x89PNG\r\n\x1a\n",
    b"\xff\xd8\xff",  # JPEG
    b"GIF87a",
    b"GIF89a",
    b"BM",
    b"II*\x00",  # TIFF, little endian
    b"MM\x00*",  # TIFF, big endian
)


class UnsupportedDocument(BadRequest):
    code = "unsupported_document"


@dataclass(frozen=True, slots=True)
class Document:
    data: bytes
    kind: Kind
    name: str
    mimetype: str


def detect_kind(data: bytes) -> Kind:
    """PDF or image, from the bytes themselves (URLs and uploads often lie about their type)."""
    if b"%PDF-" in data[:1024]:
        return "pdf"
    if data.startswith(_IMAGE_MAGIC) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP"):
        return "image"
    raise UnsupportedDocument(
        "the document is neither a PDF nor an image (PNG, JPEG, GIF, BMP, TIFF, WebP)",
        param="document",
    )


def _mimetype(kind: Kind, data: bytes) -> str:
    if kind == "pdf":
        return "application/pdf"
    if data.startswith(b"\x89PNG"):
        return "image/png"
    if data.startswith(b"\xff\xd8"):
        return "image/jpeg"
    return "application/octet-stream"


async def _read_file(
    file_id: str, files: FileService, blobs: BlobStore, max_bytes: int
) -> tuple[bytes, str]:
    row = await files.get(file_id)  # 404 for an id of another workspace
    if row.size > max_bytes:
        raise PayloadTooLarge(f"file {file_id} is over the {max_bytes}-byte document limit")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in blobs.get(row.blob_key):
            size += len(chunk)
            if size > max_bytes:
                raise PayloadTooLarge(f"file {file_id} is over the {max_bytes}-byte document limit")
            chunks.append(chunk)
    except KeyError as exc:
        raise BadRequest(
            f"the content of file {file_id} is no longer stored", code="file_not_found"
        ) from exc
    return b"".join(chunks), row.filename


async def load_document(
    request: OCRRequest,
    policy: FetchPolicy,
    files: FileService,
    blobs: BlobStore,
    release: Release | None = None,
) -> Document:
    """The request's document; 400 for a refused or failed URL or a format that is not a PDF or
    an image, 404 for an unknown file, 413 over the size limit. A URL is fetched once `release`
    ended the caller's transaction."""
    document = request.document
    if isinstance(document, FileChunk):
        data, name = await _read_file(document.file_id, files, blobs, policy.max_bytes)
    else:
        url = document.document_url if isinstance(document, DocumentURLChunk) else document.url
        fetched = await fetch_url(url, policy, release)
        data = fetched.content
        name = (
            document.document_name
            if isinstance(document, DocumentURLChunk) and document.document_name
            else fetched.url[:200]
        )
    if not data:
        raise UnsupportedDocument("the document is empty", param="document")
    kind = detect_kind(data)
    return Document(data, kind, name, _mimetype(kind, data))
