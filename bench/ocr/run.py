"""OCR accuracy and speed of the local engines, on documents this script renders.

    .venv/bin/python -m bench.ocr.run [--repeat N]

For RapidOCR and Tesseract it prints the character error rate (CER: edit distance over the
reference's characters, whitespace collapsed) of the whole pipeline (`prepare` + `recognise`,
markdown flattened to text) on:
- images rendered from a PDF at 150 dpi (PNG), at 72 dpi (small text), and as a JPEG at
  quality 30 (compression noise);
- a full A4 page of prose rendered at 200 dpi, embedded in an image-only PDF (a "scan");
and the pages per second of a 4-page scanned PDF and of a 20-page PDF with a text layer (read,
not recognised: the engine is not used). Timings are wall-clock on this machine, models loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import time
from typing import Any

from PIL import Image

from maestrale.engines.protocols import OcrEngine
from maestrale.ocr.documents import Document, detect_kind
from maestrale.ocr.pipeline import ImageOptions, prepare, recognise
from tests.ocr import samples


def document(content: bytes) -> Document:
    kind = detect_kind(content)
    return Document(content, kind, "bench", "application/pdf" if kind == "pdf" else "image/png")


async def run_pipeline(engine: OcrEngine, content: bytes) -> tuple[str, int, float]:
    started = time.perf_counter()
    prepared = await prepare(document(content), None, 1000)
    try:
        pages = await recognise(engine, prepared, ImageOptions())
    finally:
        await prepared.close()
    elapsed = time.perf_counter() - started
    return "\n".join(samples.plain(page.markdown) for page in pages), len(pages), elapsed


def jpeg(png: bytes, quality: int) -> bytes:
    buffer = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("RGB").save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def cases() -> list[tuple[str, bytes, str]]:
    lines_pdf = samples.lines_pdf(samples.SCAN_LINES)
    lines = "\n".join(samples.SCAN_LINES)
    png150 = samples.render_png(lines_pdf, dpi=150)
    prose_pdf = samples.lines_pdf(samples.PROSE, size=11)
    return [
        ("image 150 dpi PNG", png150, lines),
        ("image 72 dpi PNG (small)", samples.render_png(lines_pdf, dpi=72), lines),
        ("image 150 dpi JPEG q30", jpeg(png150, 30), lines),
        (
            "scanned PDF, prose 200 dpi",
            samples.scanned_pdf(samples.render_png(prose_pdf, dpi=200)),
            "\n".join(samples.PROSE),
        ),
    ]


def text_layer_pdf(pages: int) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for _ in range(pages):
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 20)
        pdf.cell(0, 10, samples.HEADING, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=11)
        for line in samples.PROSE * 4:
            pdf.multi_cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


async def bench_engine(name: str, engine: Any, repeat: int) -> None:
    await engine.load()
    print(f"\n## {name}")
    print(f"{'case':32} {'CER':>7} {'seconds':>8}")
    for label, content, reference in cases():
        errors: list[float] = []
        times: list[float] = []
        for _ in range(repeat):
            text, _, elapsed = await run_pipeline(engine, content)
            errors.append(samples.cer(reference, text))
            times.append(elapsed)
        print(f"{label:32} {statistics.mean(errors):7.1%} {statistics.median(times):8.2f}")
    png = samples.render_png(samples.lines_pdf(samples.PROSE, size=11), dpi=200)
    scanned = samples.scanned_pdf(png, pages=4)
    _, count, elapsed = await run_pipeline(engine, scanned)
    print(f"scanned PDF: {count} pages in {elapsed:.2f} s = {count / elapsed:.2f} pages/s")
    await engine.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    from maestrale.engines.local.rapidocr_engine import RapidOcrEngine, RapidOcrOptions

    await bench_engine("rapidocr (PP-OCRv6 small)", RapidOcrEngine(RapidOcrOptions()), args.repeat)
    try:
        from maestrale.engines.local.tesseract_engine import TesseractEngine, TesseractOptions
    except ImportError as exc:
        print(f"\ntesseract skipped: {exc}")
    else:
        await bench_engine(
            "tesseract (tessdata_fast eng)", TesseractEngine(TesseractOptions()), args.repeat
        )

    from maestrale.engines.local.rapidocr_engine import RapidOcrEngine as Unused

    content = text_layer_pdf(20)
    _, count, elapsed = await run_pipeline(Unused(RapidOcrOptions()), content)
    print(f"\ntext-layer PDF: {count} pages in {elapsed:.3f} s = {count / elapsed:.1f} pages/s")


if __name__ == "__main__":
    asyncio.run(main())
