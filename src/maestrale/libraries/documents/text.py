"""The extracted text of a document: a blob holding the JSON list of its pages' texts, written
by the processing job (or during the upload, see `early_text`) and read by `text_content` and
the extracted-text link."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import orjson

from maestrale.core.blobs import BlobStore
from maestrale.libraries.errors import DocumentNotProcessed, InvalidDocumentQuery
from maestrale.libraries.tables import LibraryDocument

# Between two pages of the text given back whole.
PAGE_BREAK = "\n\n"


def original_key(workspace_id: str, library_id: str, document_id: str) -> str:
    """The blob of a document's content, as uploaded."""
    return f"{workspace_id}/libraries/{library_id}/{document_id}/original"


def text_key(workspace_id: str, library_id: str, document_id: str, generation: int) -> str:
    """The blob of the pages a document's processing at `generation` extracted."""
    return f"{workspace_id}/libraries/{library_id}/{document_id}/text-{generation}.json"


async def one_chunk(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def read_blob(blobs: BlobStore, key: str) -> bytes:
    """A whole blob; KeyError if it is gone."""
    return b"".join([chunk async for chunk in blobs.get(key)])


async def store_pages(blobs: BlobStore, key: str, pages: Sequence[str]) -> None:
    await blobs.put(key, one_chunk(orjson.dumps(list(pages))))


def check_processed(document: LibraryDocument) -> str:
    """The key of the document's extracted text; 409 if it has none (not processed yet, or
    processing failed). A text document small enough has its text from the upload on, before
    its processing (`early_text`)."""
    if document.text_key is None:
        raise DocumentNotProcessed(
            f"document {document.id} has no extracted text: its processing is "
            f"{document.process_status} ({document.processing_status})",
            param="document_id",
        )
    return document.text_key


async def load_pages(blobs: BlobStore, document: LibraryDocument) -> list[str]:
    """The pages of a processed document; 409 for one that is not (yet, or could not be)."""
    key = check_processed(document)
    try:
        pages = orjson.loads(await read_blob(blobs, key))
    except KeyError as exc:
        raise DocumentNotProcessed(
            f"the extracted text of document {document.id} is no longer stored; reprocess it",
            param="document_id",
        ) from exc
    return [page for page in pages if isinstance(page, str)]


def page_range(pages: list[str], start: int | None, end: int | None) -> str:
    """Pages `start` to `end` (numbered from 1, both included; the end is clipped to the last
    page), joined by blank lines. 400 for a range that is empty or outside the document."""
    first = 1 if start is None else start
    last = len(pages) if end is None else end
    if first < 1 or last < 1:
        raise InvalidDocumentQuery("pages are numbered from 1", param="page_start")
    if last < first:
        raise InvalidDocumentQuery("page_end is before page_start", param="page_end")
    if pages and first > len(pages):
        raise InvalidDocumentQuery(
            f"page_start {first} is past the document's last page ({len(pages)})",
            param="page_start",
        )
    return PAGE_BREAK.join(pages[first - 1 : last])
