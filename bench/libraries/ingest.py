"""Library documents processed per minute: read, chunked and embedded (no database).

    .venv/bin/python -m bench.libraries.ingest [--docs N] [--scanned-docs N] [--chunk-size T]

For each kind of document this script makes (text-layer PDFs of 10 pages, scanned PDFs of 2
pages, DOCX of 5 pages, Markdown of ~20 kB), it runs `libraries.ingest.pipeline.ingest` on N
documents one after the other, as one processing worker does, and prints documents and pages
per minute, chunks per second, and where the time goes (reading, OCR included, vs embedding).

Models are the defaults of the settings, `mistral-embed` (multilingual-e5-small of the [local]
extra) and `mistral-ocr-latest` (RapidOCR of the [ocr] extra), loaded before timing;
`--embedding-model maestrale-embed` (the builtin feature-hashing double) leaves reading alone,
nearly. Where e5 is not installed, the builtin embeddings stand in (and say so); where the OCR
model is not, scanned PDFs are skipped. Timings are wall-clock on this machine; the load
average is printed beside them, since other work on a 2-core machine shows in the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from maestrale.config import Settings
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import load_catalog
from maestrale.libraries.ingest.chunking import chunk
from maestrale.libraries.ingest.embedding import embed
from maestrale.libraries.ingest.errors import EmbeddingUnavailable
from maestrale.libraries.ingest.extract import ExtractionLimits, extract
from maestrale.libraries.ingest.pipeline import ocr_engine
from tests.libraries.ingest import samples


@dataclass
class Services:
    settings: Settings
    engines: EngineRegistry


def markdown_document(sections: int = 40) -> bytes:
    parts = [f"# {samples.TITLE}"]
    for i in range(sections):
        parts.append(f"## Section {i + 1}")
        parts.extend(samples.PARAGRAPHS)
        parts.append("- ships: 410\n- tonnes: 52000\n- [details](https://example.org/x)")
    return "\n\n".join(parts).encode()


def docx_document(pages: int = 5) -> bytes:
    import io

    import docx
    from docx.enum.text import WD_BREAK

    document = docx.Document()
    for page in range(pages):
        document.add_heading(f"Chapter {page + 1}", level=1)
        for _ in range(3):
            for paragraph in samples.PARAGRAPHS:
                document.add_paragraph(paragraph)
        table = document.add_table(rows=len(samples.TABLE), cols=3)
        for r, row in enumerate(samples.TABLE):
            for c, cell in enumerate(row):
                table.cell(r, c).text = cell
        if page + 1 < pages:
            document.add_paragraph().add_run().add_break(WD_BREAK.PAGE)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


@dataclass
class Figures:
    label: str
    docs: int = 0
    pages: int = 0
    chunks: int = 0
    tokens: int = 0
    read: float = 0.0
    embedded: float = 0.0
    per_doc: list[float] | None = None

    def line(self) -> str:
        total = self.read + self.embedded
        per_minute = self.docs / total * 60 if total else 0.0
        median = statistics.median(self.per_doc or [0.0])
        return (
            f"{self.label:30} {self.docs:>4} {per_minute:>9.1f} {self.pages / total * 60:>9.0f} "
            f"{self.chunks / total:>8.1f} {median:>8.2f} {self.read / total:>6.0%} "
            f"{self.embedded / total:>6.0%}"
        )


async def run_kind(
    services: Services, label: str, make: Callable[[], bytes], name: str, docs: int, size: int
) -> Figures:
    settings = services.settings
    engine, _ = ocr_engine(services)
    figures = Figures(label, per_doc=[])
    data = make()
    for _ in range(docs):
        started = time.perf_counter()
        extracted = await extract(data, name, None, engine, limits=ExtractionLimits.of(settings))
        read = time.perf_counter()
        pieces = chunk(extracted.pages, size)
        result = await embed(services, [piece.text for piece in pieces])
        done = time.perf_counter()
        figures.docs += 1
        figures.pages += len(extracted.pages)
        figures.chunks += len(pieces)
        figures.tokens += result.tokens
        figures.read += read - started
        figures.embedded += done - read
        assert figures.per_doc is not None
        figures.per_doc.append(done - started)
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--docs", type=int, default=10, help="documents of each text kind")
    parser.add_argument("--scanned-docs", type=int, default=3, help="scanned PDFs (2 pages)")
    parser.add_argument("--chunk-size", type=int, default=512, help="tokens per chunk")
    parser.add_argument(
        "--embedding-model",
        default="mistral-embed",
        help="catalog model of the embeddings (maestrale-embed: reading alone, nearly)",
    )
    args = parser.parse_args()

    registry = EngineRegistry(load_catalog())
    services = Services(Settings(library_embedding_model=args.embedding_model), registry)
    note = ""
    try:
        await embed(services, ["warm up the embeddings model"])
    except EmbeddingUnavailable as exc:
        note = f" (builtin stand-in: {exc.message})"
        services = Services(Settings(library_embedding_model="maestrale-embed"), registry)
        await embed(services, ["warm up"])
    engine, no_ocr = ocr_engine(services)
    model = registry.resolve(services.settings.library_embedding_model)
    assert model is not None
    print(f"embeddings: {model.spec.id}{note}")
    if engine is not None:
        await extract(samples.scanned_pdf(), "warm.pdf", None, engine)  # loads the OCR models
        ocr_model = registry.resolve(services.settings.library_ocr_model)
        print(f"OCR: {ocr_model.spec.id if ocr_model else '?'}")
    else:
        print(f"OCR: none ({no_ocr}); scanned PDFs skipped")
    print(f"CPUs: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")

    kinds: list[tuple[str, Callable[[], bytes], str, int]] = [
        ("text PDF, 10 pages", lambda: samples.text_pdf(10), "report.pdf", args.docs),
        ("DOCX, 5 pages", docx_document, "report.docx", args.docs),
        ("Markdown, ~20 kB", markdown_document, "notes.md", args.docs),
    ]
    if engine is not None:
        kinds.append(
            (
                "scanned PDF, 2 pages",
                lambda: samples.scanned_pdf(pages=2),
                "scan.pdf",
                args.scanned_docs,
            )
        )
    print(
        f"\n{'documents':30} {'n':>4} {'docs/min':>9} {'pages/min':>9} {'chunks/s':>8} "
        f"{'s/doc':>8} {'read':>6} {'embed':>6}"
    )
    for label, make, name, count in kinds:
        figures = await run_kind(services, label, make, name, count, args.chunk_size)
        print(figures.line(), flush=True)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    await registry.aclose()


if __name__ == "__main__":
    asyncio.run(main())
