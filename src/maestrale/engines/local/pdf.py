"""PDF pages through pdfium (`pypdfium2`, [ocr] extra): text layer runs with their boxes and sizes,
embedded images with their boxes, and page renders for recognition.

pdfium is not thread-safe, even across documents: every call into it holds `PDFIUM_LOCK`, and the
functions here are blocking (run them in a thread). Coordinates are converted once from PDF
points (origin bottom-left) to pixels of the page rendered at `dpi` (origin top-left), the frame
of the OCR response's boxes and dimensions.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from maestrale.engines.ocr_types import Box

__all__ = [
    "PDFIUM_LOCK",
    "PdfImage",
    "PdfPage",
    "PdfUnreadable",
    "TextRun",
    "close_pdf",
    "open_pdf",
    "page_count",
    "read_page",
    "render_page",
]

# pdfium keeps process-wide state: one lock for the process, whatever document is open.
PDFIUM_LOCK = threading.Lock()
# Images (embedded ones, page renders) are decoded up to this many pixels: a small file can
# describe an enormous bitmap.
MAX_PIXELS = 60_000_000
# A text layer with fewer characters than this on a page mostly covered by an image is a scan
# with a stamp or a page number: the page is recognised rather than read.
_SCAN_TEXT_CHARS = 20
_SCAN_IMAGE_AREA = 0.5


class PdfUnreadable(Exception):
    """The bytes are not a PDF pdfium can open (damaged, encrypted)."""


@dataclass(frozen=True, slots=True)
class TextRun:
    """A run of text on one line of the text layer; `size` is its font's height in pixels."""

    text: str
    box: Box
    size: float


@dataclass(frozen=True, slots=True)
class PdfImage:
    """An image drawn on the page: its box in page pixels and its pixels as drawn (RGB)."""

    box: Box
    image: Any  # PIL.Image.Image


@dataclass(slots=True)
class PdfPage:
    index: int
    width: int  # pixels at the dpi asked for
    height: int
    runs: list[TextRun] = field(default_factory=list)
    images: list[PdfImage] = field(default_factory=list)
    text_chars: int = 0

    @property
    def is_scan(self) -> bool:
        """No usable text layer: the page must be rendered and recognised."""
        if self.text_chars == 0:
            return True
        page_area = max(self.width * self.height, 1)
        covered = max((_area(image.box) for image in self.images), default=0.0)
        return self.text_chars < _SCAN_TEXT_CHARS and covered / page_area >= _SCAN_IMAGE_AREA


def _area(box: Box) -> float:
    return max(box[2] - box[0], 0.0) * max(box[3] - box[1], 0.0)


def open_pdf(data: bytes) -> Any:
    """Open a PDF held in memory; raise `PdfUnreadable`."""
    with PDFIUM_LOCK:
        try:
            return pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            raise PdfUnreadable(str(exc)) from exc


def page_count(document: Any) -> int:
    with PDFIUM_LOCK:
        return len(document)


def close_pdf(document: Any) -> None:
    with PDFIUM_LOCK:
        document.close()


def read_page(document: Any, index: int, dpi: int, *, with_images: bool = True) -> PdfPage:
    """The page's size in pixels, its text layer runs and (if asked) its images."""
    scale = dpi / 72.0
    with PDFIUM_LOCK:
        page = document[index]
        try:
            width_pt, height_pt = page.get_size()
            result = PdfPage(index, round(width_pt * scale), round(height_pt * scale))

            def to_pixels(left: float, bottom: float, right: float, top: float) -> Box:
                return (
                    left * scale,
                    (height_pt - top) * scale,
                    right * scale,
                    (height_pt - bottom) * scale,
                )

            textpage = page.get_textpage()
            try:
                result.text_chars = len(textpage.get_text_range().strip())
                if result.text_chars:
                    result.runs = _runs(textpage, to_pixels, scale)
            finally:
                textpage.close()
            if with_images:
                result.images = _images(page, to_pixels)
            return result
        finally:
            page.close()


def _runs(textpage: Any, to_pixels: Any, scale: float) -> list[TextRun]:
    # pdfium groups the characters of a line that share a font into rectangles: a table's cells
    # come out as separate runs, which the layout step relies on.
    runs: list[TextRun] = []
    for i in range(textpage.count_rects()):
        left, bottom, right, top = textpage.get_rect(i)
        text = " ".join(textpage.get_text_bounded(left, bottom, right, top).split())
        if not text:
            continue
        # The "loose" box of the run's first character spans the font's ascent and descent:
        # a size that does not depend on which letters the run holds.
        index = textpage.get_index(left + 0.5, (bottom + top) / 2, 2.0, 2.0)
        size = top - bottom
        if index >= 0:
            _, char_bottom, _, char_top = textpage.get_charbox(index, loose=True)
            if char_top > char_bottom:
                size = char_top - char_bottom
        runs.append(TextRun(text, to_pixels(left, bottom, right, top), size * scale))
    return runs


def _images(page: Any, to_pixels: Any) -> list[PdfImage]:
    images: list[PdfImage] = []
    for obj in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,)):
        try:
            width, height = obj.get_px_size()
            if width * height > MAX_PIXELS:
                continue  # not decoded: it would take gigabytes
            left, bottom, right, top = obj.get_bounds()
            # Rendered, the image comes with its mask and colour space applied, as it is seen.
            bitmap = obj.get_bitmap(render=True)
            image = bitmap.to_pil().convert("RGB")  # a copy: the bitmap's buffer is freed
        except pdfium.PdfiumError:
            continue  # an image pdfium cannot decode is left out, not fatal
        images.append(PdfImage(to_pixels(left, bottom, right, top), image))
    return images


def render_page(document: Any, index: int, dpi: int) -> tuple[Any, float]:
    """The page rendered at `dpi` (less for a page so large that it would exceed `MAX_PIXELS`)
    as an RGB Pillow image, and the factor from its pixels to pixels at `dpi`."""
    with PDFIUM_LOCK:
        page = document[index]
        try:
            width_pt, height_pt = page.get_size()
            scale = dpi / 72.0
            pixels = width_pt * scale * height_pt * scale
            shrink = min(1.0, (MAX_PIXELS / pixels) ** 0.5) if pixels > 0 else 1.0
            bitmap = page.render(scale=scale * shrink)
            return bitmap.to_pil().convert("RGB"), 1.0 / shrink
        finally:
            page.close()
