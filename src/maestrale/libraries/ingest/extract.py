"""From a document's bytes to the text of its pages.

The format comes from the bytes first (`formats.detect`), then each format has its reader:
PDF text layers and scans (`pdf_reader`, the OCR endpoint's parts), images (OCR), DOCX
(python-docx), HTML (BeautifulSoup), Markdown (markdown-it-py), and UTF-8 text (CSV, JSON,
code...). A PDF has its pages; a DOCX is cut at its hard page breaks; other formats are one page.

Hostile files meet limits: pages read (and pages recognised by OCR), bytes a DOCX unpacks to,
elements a parser builds, characters of text, and the time the whole reading may take. The
parsers of DOCX, HTML, Markdown and text run in a child process bounded in memory, processor
and wall-clock time (`isolated`): a document over a bound is `Unreadable` with the bound it
went over, and the worker's other documents go on meanwhile. PDFs are read by pdfium in a
thread, page by page, after their page count is checked.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from maestrale.engines.protocols import OcrEngine
from maestrale.libraries.ingest import pdf_reader
from maestrale.libraries.ingest.errors import Unreadable
from maestrale.libraries.ingest.formats import Format, detect
from maestrale.libraries.ingest.isolated import Bounds, read_isolated
from maestrale.libraries.ingest.plain import clean

if TYPE_CHECKING:
    from maestrale.config import Settings

__all__ = ["Extracted", "ExtractionLimits", "Unreadable", "extract"]

_NO_OCR = "no OCR engine is configured (setting library_ocr_model)"


@dataclass(frozen=True, slots=True)
class ExtractionLimits:
    """What one document may cost to read."""

    max_pages: int = 1000
    max_ocr_pages: int = 300
    max_unpacked_bytes: int = 256 * 1024 * 1024
    max_text_chars: int = 20_000_000
    max_elements: int = 500_000
    parse_memory_bytes: int = 1024 * 1024 * 1024
    parse_seconds: float = 120.0
    timeout_seconds: float = 900.0

    @classmethod
    def of(cls, settings: Settings) -> ExtractionLimits:
        return cls(
            max_pages=settings.library_max_pages,
            max_ocr_pages=settings.library_max_ocr_pages,
            max_unpacked_bytes=settings.library_max_unpacked_bytes,
            max_text_chars=settings.library_max_text_chars,
            max_elements=settings.library_max_elements,
            parse_memory_bytes=settings.library_parse_memory_bytes,
            parse_seconds=settings.library_parse_seconds,
            timeout_seconds=settings.library_extract_timeout_seconds,
        )

    def bounds(self) -> Bounds:
        """The bounds of the child process that parses a text format."""
        return Bounds(
            max_pages=self.max_pages,
            max_unpacked_bytes=self.max_unpacked_bytes,
            max_text_chars=self.max_text_chars,
            max_elements=self.max_elements,
            memory_bytes=self.parse_memory_bytes,
            parse_seconds=self.parse_seconds,
        )


@dataclass(frozen=True, slots=True)
class Extracted:
    """The text of each page (index 0 is page 1), the format found, and how many pages the OCR
    engine recognised (for accounting)."""

    pages: list[str]
    mimetype: str
    extension: str  # lower case, without the dot: "pdf", "docx", "md", "txt"
    ocr_pages: int = 0


async def extract(
    data: bytes,
    filename: str,
    mimetype: str | None,
    ocr: OcrEngine | None,
    *,
    limits: ExtractionLimits | None = None,
    no_ocr: str = _NO_OCR,
) -> Extracted:
    """The document's pages of text; `Unreadable(reason)` when it cannot be read. `ocr` reads
    scanned pages and images (None: such a document is unreadable, `no_ocr` saying why).
    `OcrUnavailable` when the engine fails as a busy server does (worth retrying)."""
    limits = limits or ExtractionLimits()
    if not data:
        raise Unreadable("the document is empty")
    found = detect(data, filename, mimetype)
    try:
        async with asyncio.timeout(limits.timeout_seconds):
            pages, ocr_pages = await _read(found, data, filename, ocr, limits, no_ocr)
    except TimeoutError as exc:
        raise Unreadable(
            f"reading the document took over {limits.timeout_seconds:g} seconds"
        ) from exc
    if found.reader in ("pdf", "image"):  # the child process cleans the pages it reads
        pages = [clean(page) for page in pages]
    if sum(map(len, pages)) > limits.max_text_chars:
        raise Unreadable(f"the document has over {limits.max_text_chars} characters of text")
    if not any(page.strip() for page in pages):
        raise Unreadable("the document has no text")
    return Extracted(pages, found.mimetype, found.extension, ocr_pages)


async def _read(
    found: Format,
    data: bytes,
    filename: str,
    ocr: OcrEngine | None,
    limits: ExtractionLimits,
    no_ocr: str,
) -> tuple[list[str], int]:
    name = filename[:200] or "document"
    if found.reader == "pdf":
        pdf = await pdf_reader.read_pdf(
            data,
            name,
            ocr,
            max_pages=limits.max_pages,
            max_ocr_pages=limits.max_ocr_pages,
            max_chars=limits.max_text_chars,
            no_ocr=no_ocr,
        )
        return pdf.pages, pdf.ocr_pages
    if found.reader == "image":
        return [await pdf_reader.read_image(data, name, found.mimetype, ocr, no_ocr)], 1
    # Text formats: a text of more characters than the limit has at least as many bytes.
    if found.reader != "docx" and len(data) > 4 * limits.max_text_chars + 4:
        raise Unreadable(f"the document has over {limits.max_text_chars} characters of text")
    return await read_isolated(found.reader, data, limits.bounds()), 0
