"""From a document to pages: text layers read, scans and images recognised by the engine,
embedded images boxed and numbered, each page laid out as markdown.

Imaging libraries (pypdfium2, Pillow) come with the [ocr] extra and are imported when a document
is opened, so that the server runs without them (upstream OCR needs none).
"""

from __future__ import annotations

import asyncio
import io
import warnings
from dataclasses import dataclass, field
from typing import Any

from maestrale.core.errors import BadRequest, PayloadTooLarge, ServiceUnavailable
from maestrale.engines.ocr_types import Box, OcrImage, OcrLine
from maestrale.engines.protocols import OcrEngine
from maestrale.ocr.documents import Document
from maestrale.ocr.layout import Fragment, Layout, lay_out
from maestrale.ocr.pages import select_pages

# Pages are rendered (and boxes given) at the resolution the platform reports for PDF pages.
DPI = 200
# An image covering this much of a recognised page is the scan itself, not a figure on it.
_SCAN_COVER = 0.85
# Decoded images larger than this are refused (a small compressed file can decode to gigabytes).
MAX_IMAGE_PIXELS = 60_000_000


class InvalidDocument(BadRequest):
    code = "invalid_document"


@dataclass(frozen=True, slots=True)
class ImageOptions:
    limit: int | None = None
    min_size: int = 0


@dataclass(slots=True)
class ExtractedImage:
    id: str
    box: tuple[int, int, int, int]
    image: Any  # PIL.Image.Image, for base64 and annotation


@dataclass(slots=True)
class PageResult:
    index: int
    layout: Layout
    width: int
    height: int
    dpi: int
    images: list[ExtractedImage] = field(default_factory=list)

    @property
    def markdown(self) -> str:
        return self.layout.markdown


def _imaging() -> tuple[Any, Any]:
    try:
        from PIL import Image

        from maestrale.engines.local import pdf
    except ImportError as exc:
        raise ServiceUnavailable(
            f"local OCR needs the [ocr] extra ({exc}): pip install 'maestrale[ocr]'",
            code="engine_unavailable",
        ) from exc
    return Image, pdf


class _Numbering:
    """Image ids across the document (img-0.jpeg, img-1.jpeg...), the limit and the minimum
    size applied in page order."""

    def __init__(self, options: ImageOptions) -> None:
        self.options = options
        self.next = 0

    def take(
        self, box: Box, page_width: int, page_height: int, image: Any
    ) -> ExtractedImage | None:
        left, top = max(round(box[0]), 0), max(round(box[1]), 0)
        right, bottom = min(round(box[2]), page_width), min(round(box[3]), page_height)
        if right - left < max(self.options.min_size, 1) or bottom - top < max(
            self.options.min_size, 1
        ):
            return None
        if self.options.limit is not None and self.next >= self.options.limit:
            return None
        extracted = ExtractedImage(f"img-{self.next}.jpeg", (left, top, right, bottom), image)
        self.next += 1
        return extracted


class OpenedDocument:
    """An opened document and the pages to process; `close()` frees it."""

    def __init__(self, document: Document, pdf_handle: Any, image: Any, indexes: list[int]):
        self.document = document
        self.pdf_handle = pdf_handle
        self.image = image
        self.indexes = indexes

    async def close(self) -> None:
        if self.pdf_handle is not None:
            _, pdf = _imaging()
            await asyncio.to_thread(pdf.close_pdf, self.pdf_handle)
            self.pdf_handle = None


def _open_image(data: bytes) -> Any:
    Image, _ = _imaging()
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(data))
            if image.width * image.height > MAX_IMAGE_PIXELS:
                raise PayloadTooLarge(
                    f"the image has {image.width}x{image.height} pixels, over the limit of "
                    f"{MAX_IMAGE_PIXELS}",
                    code="image_too_large",
                )
            image.load()
        except (Image.DecompressionBombWarning, Image.DecompressionBombError) as exc:
            raise PayloadTooLarge(str(exc), code="image_too_large") from exc
        except (OSError, SyntaxError, ValueError) as exc:
            raise InvalidDocument(f"the image cannot be decoded: {exc}", param="document") from exc
    return image


async def prepare(
    document: Document, pages: list[int] | str | None, max_pages: int
) -> OpenedDocument:
    """Open the document and check the page selection (400, 413) before any work is done."""
    if document.kind == "image":
        image = await asyncio.to_thread(_open_image, document.data)
        return OpenedDocument(document, None, image, select_pages(pages, 1, max_pages))
    _, pdf = _imaging()
    try:
        handle = await asyncio.to_thread(pdf.open_pdf, document.data)
    except pdf.PdfUnreadable as exc:
        raise InvalidDocument(
            f"the PDF cannot be read (damaged or encrypted): {exc}", param="document"
        ) from exc
    prepared = OpenedDocument(document, handle, None, [])
    try:
        count = await asyncio.to_thread(pdf.page_count, handle)
        prepared.indexes = select_pages(pages, count, max_pages)
    except BaseException:
        await prepared.close()
        raise
    return prepared


def _fragments_of_lines(lines: list[OcrLine]) -> list[Fragment]:
    return [
        Fragment(line.text, line.box, line.box[3] - line.box[1], confidence=line.confidence)
        for line in lines
    ]


def _scaled(line: OcrLine, factor: float) -> OcrLine:
    left, top, right, bottom = line.box
    box: Box = (left * factor, top * factor, right * factor, bottom * factor)
    return OcrLine(line.text, box, line.confidence)


def _image_fragments(images: list[ExtractedImage]) -> list[Fragment]:
    fragments: list[Fragment] = []
    for image in images:
        left, top, right, bottom = image.box
        box: Box = (float(left), float(top), float(right), float(bottom))
        fragments.append(Fragment("", box, 0.0, image_id=image.id))
    return fragments


async def _image_page(engine: OcrEngine, prepared: OpenedDocument) -> PageResult:
    image = prepared.image
    rgb = await asyncio.to_thread(image.convert, "RGB")
    lines = await engine.recognize(OcrImage(rgb, prepared.document.name))
    dpi_info = image.info.get("dpi")
    dpi = round(float(dpi_info[0])) if isinstance(dpi_info, tuple) and dpi_info[0] else 72
    return PageResult(0, lay_out(_fragments_of_lines(lines)), rgb.width, rgb.height, dpi)


async def _pdf_page(
    engine: OcrEngine, prepared: OpenedDocument, index: int, numbering: _Numbering
) -> PageResult:
    _, pdf = _imaging()
    want_images = numbering.options.limit != 0
    page = await asyncio.to_thread(
        pdf.read_page, prepared.pdf_handle, index, DPI, with_images=want_images
    )
    page_area = max(page.width * page.height, 1)
    candidates = page.images
    if page.is_scan:
        rendered, factor = await asyncio.to_thread(pdf.render_page, prepared.pdf_handle, index, DPI)
        lines = await engine.recognize(OcrImage(rendered, f"page {index}"))
        if factor != 1.0:  # a huge page, rendered smaller: boxes back to the page's pixels
            lines = [_scaled(line, factor) for line in lines]
        fragments = _fragments_of_lines(lines)
        candidates = [
            image
            for image in page.images
            if (image.box[2] - image.box[0]) * (image.box[3] - image.box[1])
            < _SCAN_COVER * page_area
        ]
    else:
        fragments = [Fragment(run.text, run.box, run.size) for run in page.runs]
    images = [
        extracted
        for candidate in candidates
        if (extracted := numbering.take(candidate.box, page.width, page.height, candidate.image))
    ]
    layout = lay_out(fragments + _image_fragments(images))
    return PageResult(index, layout, page.width, page.height, DPI, images)


async def recognise(
    engine: OcrEngine, prepared: OpenedDocument, options: ImageOptions
) -> list[PageResult]:
    """Every selected page, in the order asked; engine failures raise `EngineError`."""
    if prepared.image is not None:
        return [await _image_page(engine, prepared)]
    numbering = _Numbering(options)
    return [await _pdf_page(engine, prepared, index, numbering) for index in prepared.indexes]
