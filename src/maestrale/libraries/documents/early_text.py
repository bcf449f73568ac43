"""The text of a small text-like document (plain text, CSV, JSON, code, Markdown, HTML), read
during its upload so that `text_content` answers at once; chunking and embedding stay with the
processing job, which reads the document again and replaces this text with its own.

Only under a size bound (`library_upload_text_max_bytes`, 1 MiB by default) and a short parse
time: a larger document, a PDF, DOCX or image, or one this reading fails on, waits for the job
(the job gives the reason of a document it cannot read). The reading is the job's own readers
(`ingest.child.read`: plain text in a thread, Markdown and HTML in the bounded child process of
`ingest.isolated`), with no transaction open.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from maestrale.config import Settings
from maestrale.core.blobs import BlobStore
from maestrale.libraries.documents import text
from maestrale.libraries.documents.upload import Received

log = logging.getLogger("maestrale.libraries")

# Parse time of a document read during its upload (the job's bound is minutes).
UPLOAD_PARSE_SECONDS = 10.0
_TEXT_READERS = frozenset({"text", "markdown", "html"})


def upload_text_key(workspace_id: str, library_id: str, document_id: str) -> str:
    """The blob of the text read during the upload (generation 0: before any processing)."""
    return text.text_key(workspace_id, library_id, document_id, 0)


async def read_at_upload(
    blobs: BlobStore,
    settings: Settings,
    workspace_id: str,
    library_id: str,
    document_id: str,
    received: Received,
) -> str | None:
    """The key of the stored text of the uploaded document, or None when it is left to the
    processing job (too large, not a text format, or not readable here)."""
    from maestrale.libraries.ingest.errors import Unreadable
    from maestrale.libraries.ingest.formats import detect

    if received.size > settings.library_upload_text_max_bytes:
        return None
    try:
        data = await text.read_blob(blobs, received.key)
        reader = detect(data, received.filename, received.content_type).reader
        if reader not in _TEXT_READERS:
            return None
        pages = await _pages(reader, data, received, settings)
    except Unreadable:
        return None  # the job says why, in the document's status
    except (KeyError, OSError):
        log.warning("library document %s: no text read during upload", document_id, exc_info=True)
        return None
    if not any(page.strip() for page in pages):
        return None
    key = upload_text_key(workspace_id, library_id, document_id)
    await text.store_pages(blobs, key, pages)
    return key


async def _pages(reader: str, data: bytes, received: Received, settings: Settings) -> list[str]:
    """Plain text is decoded here, in a thread (linear in its size, which is bounded); Markdown
    and HTML, whose parsers can cost far more than their size, by the job's bounded child."""
    from maestrale.libraries.ingest import child
    from maestrale.libraries.ingest.errors import Unreadable
    from maestrale.libraries.ingest.extract import ExtractionLimits, extract
    from maestrale.libraries.ingest.refused import DocumentRefused

    limits = ExtractionLimits.of(settings)
    if reader == "text":
        bounds = {"max_elements": limits.max_elements, "max_text_chars": limits.max_text_chars}
        try:
            return await asyncio.to_thread(child.read, reader, data, bounds)
        except DocumentRefused as exc:
            raise Unreadable(exc.reason) from exc
    limits = dataclasses.replace(
        limits,
        parse_seconds=min(limits.parse_seconds, UPLOAD_PARSE_SECONDS),
        timeout_seconds=min(limits.timeout_seconds, UPLOAD_PARSE_SECONDS),
    )
    extracted = await extract(data, received.filename, received.content_type, None, limits=limits)
    return extracted.pages
