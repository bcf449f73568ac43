"""Text of PDFs and images, with the OCR endpoint's own parts: pdfium for text layers and page
renders (`engines.local.pdf`), the OCR pipeline's `prepare` (guarded opening, page count) and
`recognise` (an image through the engine), and its layout (positioned text to markdown).

A page with a text layer is read, never recognised: no engine is needed for a PDF made by a
program. A page without one (a scan) is rendered and recognised by the OCR engine; without an
engine such a page makes the document unreadable, with the reason.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from maestrale.core.errors import AppError
from maestrale.engines.ocr_types import OcrImage, OcrLine
from maestrale.engines.protocols import OcrEngine
from maestrale.engines.types import EngineError
from maestrale.libraries.ingest.errors import OcrUnavailable, Unreadable
from maestrale.ocr.documents import Document
from maestrale.ocr.layout import Fragment, lay_out
from maestrale.ocr.pipeline import DPI, ImageOptions, OpenedDocument, prepare, recognise

# A text layer this short on a page is perhaps only a stamp or a page number on a scan: the
# page's images are then looked at to decide (as `engines.local.pdf.PdfPage.is_scan` does).
_SHORT_TEXT = 20


@dataclass(slots=True)
class PdfText:
    pages: list[str]
    ocr_pages: int


async def _open(document: Document, max_pages: int) -> OpenedDocument:
    try:
        return await prepare(document, None, max_pages)
    except AppError as exc:
        if exc.status_code in (400, 413):  # damaged, encrypted, too many pages, too large
            raise Unreadable(exc.message) from exc
        raise


async def _recognised(engine: OcrEngine, image: Any, where: str) -> list[OcrLine]:
    try:
        return await engine.recognize(OcrImage(image, where))
    except EngineError as exc:
        if exc.status >= 500 or exc.status == 429:
            raise OcrUnavailable(f"OCR of {where} failed: {exc.message}") from exc
        raise Unreadable(f"OCR of {where} failed: {exc.message}") from exc


def _fragment(line: OcrLine, factor: float) -> Fragment:
    """A recognised line, its box scaled back to the page's pixels at `DPI` (a huge page is
    rendered smaller)."""
    left, top, right, bottom = line.box
    box = (left * factor, top * factor, right * factor, bottom * factor)
    return Fragment(line.text, box, (bottom - top) * factor, confidence=line.confidence)


async def read_pdf(
    data: bytes,
    name: str,
    ocr: OcrEngine | None,
    *,
    max_pages: int,
    max_chars: int,
    no_ocr: str,
    max_ocr_pages: int | None = None,
) -> PdfText:
    """Every page's text (markdown), in order; `Unreadable` for a damaged or encrypted PDF, one
    with too many pages, too many scanned pages (over `max_ocr_pages`) or too much text, or a
    scanned page and no engine (`no_ocr` says why there is none)."""
    from maestrale.engines.local import pdf

    prepared = await _open(Document(data, "pdf", name, "application/pdf"), max_pages)
    result = PdfText([], 0)
    chars = 0
    try:
        for index in prepared.indexes:
            page = await asyncio.to_thread(
                pdf.read_page, prepared.pdf_handle, index, DPI, with_images=False
            )
            if 0 < page.text_chars < _SHORT_TEXT:
                page = await asyncio.to_thread(pdf.read_page, prepared.pdf_handle, index, DPI)
            if page.is_scan:
                if ocr is None:
                    raise Unreadable(
                        f"page {index + 1} has no text layer (a scan) and cannot be "
                        f"recognised: {no_ocr}"
                    )
                if max_ocr_pages is not None and result.ocr_pages >= max_ocr_pages:
                    raise Unreadable(
                        f"the document has over {max_ocr_pages} scanned pages to recognise "
                        f"(page {index + 1} is one more)"
                    )
                image, factor = await asyncio.to_thread(
                    pdf.render_page, prepared.pdf_handle, index, DPI
                )
                lines = await _recognised(ocr, image, f"page {index + 1}")
                fragments = [_fragment(line, factor) for line in lines]
                result.ocr_pages += 1
            else:
                fragments = [Fragment(run.text, run.box, run.size) for run in page.runs]
            text = lay_out(fragments).markdown if fragments else ""
            chars += len(text)
            if chars > max_chars:
                raise Unreadable(f"the document has over {max_chars} characters of text")
            result.pages.append(text)
    finally:
        await prepared.close()
    return result


async def read_image(
    data: bytes, name: str, mimetype: str, ocr: OcrEngine | None, no_ocr: str
) -> str:
    """The text of an image, recognised by the engine (the image is one page)."""
    if ocr is None:
        raise Unreadable(f"an image is read by OCR, and it is not available: {no_ocr}")
    prepared = await _open(Document(data, "image", name, mimetype), 1)
    try:
        pages = await recognise(ocr, prepared, ImageOptions(limit=0))
    except EngineError as exc:
        if exc.status >= 500 or exc.status == 429:
            raise OcrUnavailable(f"OCR of the image failed: {exc.message}") from exc
        raise Unreadable(f"OCR of the image failed: {exc.message}") from exc
    finally:
        await prepared.close()
    return pages[0].markdown if pages else ""
