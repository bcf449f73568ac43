"""Scanned pages and images, recognised by the local OCR engine (RapidOCR, [ocr] extra)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from maestrale.libraries.ingest.extract import extract
from tests.libraries.ingest import samples

pytest.importorskip("pypdfium2")
pytest.importorskip("rapidocr")


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def recognised(text: str, lines: list[str]) -> float:
    """The share of the lines' words found in `text` (OCR may miss a character here and
    there: tests ask for most words, not an exact transcript)."""
    wanted = words(" ".join(lines))
    return len(wanted & words(text)) / len(wanted)


async def test_scanned_pdf_is_recognised(rapid: Any) -> None:
    extracted = await extract(samples.scanned_pdf(pages=2), "scan.pdf", None, rapid)
    assert (extracted.mimetype, extracted.ocr_pages, len(extracted.pages)) == (
        "application/pdf",
        2,
        2,
    )
    for page in extracted.pages:
        assert recognised(page, samples.SCAN_LINES) >= 0.8, page
    assert "48213" in extracted.pages[0]


async def test_mixed_pdf_reads_the_text_page_and_recognises_the_scan(rapid: Any) -> None:
    extracted = await extract(samples.mixed_pdf(), "mixed.pdf", None, rapid)
    assert extracted.ocr_pages == 1
    assert extracted.pages[0] == samples.PARAGRAPHS[0]  # the text layer, exactly
    assert recognised(extracted.pages[1], samples.SCAN_LINES) >= 0.8


async def test_image_is_recognised(rapid: Any) -> None:
    image = samples.png(samples.text_image(samples.SCAN_LINES))
    extracted = await extract(image, "photo", "application/octet-stream", rapid)
    assert (extracted.mimetype, extracted.extension, extracted.ocr_pages) == ("image/png", "png", 1)
    assert recognised(extracted.pages[0], samples.SCAN_LINES) >= 0.8
