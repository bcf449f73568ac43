"""A document's bytes to its pages, chunks and embeddings, in one call, with no database.

The OCR engine of scanned pages and images is the catalog model named by the setting
`library_ocr_model` (default `mistral-ocr-latest`, the local RapidOCR model of the [ocr]
extra); it must be a local engine (one that recognises images: PDF pages are rendered here).
Without one, a document that needs OCR is unreadable and its reason says what to install.
"""

from __future__ import annotations

from dataclasses import dataclass

from maestrale.engines.protocols import OcrEngine
from maestrale.libraries.ingest.chunking import Chunk, chunk
from maestrale.libraries.ingest.embedding import (
    Embedded,
    EngineServices,
    embed,
    embedding_model,
)
from maestrale.libraries.ingest.extract import Extracted, ExtractionLimits, extract

__all__ = ["Ingested", "ingest", "ocr_engine"]


@dataclass(frozen=True, slots=True)
class Ingested:
    extracted: Extracted
    chunks: list[Chunk]
    embedded: Embedded  # row i of `embedded.vectors` is the vector of `chunks[i]`


def ocr_engine(services: EngineServices) -> tuple[OcrEngine | None, str]:
    """The OCR engine of libraries, or None and the reason there is none."""
    name = services.settings.library_ocr_model
    resolved = services.engines.resolve(name)
    if resolved is None:
        return None, (
            f"the OCR model {name!r} (setting library_ocr_model) is not served: install the "
            "[ocr] extra for the default local model, or name a served local OCR model"
        )
    if not resolved.spec.has("ocr") or not isinstance(resolved.engine, OcrEngine):
        return None, (
            f"the model {name!r} (setting library_ocr_model) is not a local OCR model (one "
            "that recognises images)"
        )
    return resolved.engine, ""


async def ingest(
    services: EngineServices,
    *,
    data: bytes,
    filename: str,
    mimetype: str | None,
    chunk_size: int | None,
) -> Ingested:
    """Read, chunk and embed a document. `Unreadable(reason)` for a document that cannot be
    read (a final answer); `OcrUnavailable` and `EmbeddingUnavailable` when a model is missing
    or failing (worth retrying once it is back); `EmbeddingRefused` when the model refuses the
    text."""
    embedding_model(services)  # a model that is not served fails before any reading
    engine, no_ocr = ocr_engine(services)
    extracted = await extract(
        data,
        filename,
        mimetype,
        engine,
        limits=ExtractionLimits.of(services.settings),
        no_ocr=no_ocr or "no OCR engine",
    )
    chunks = chunk(extracted.pages, chunk_size)
    embedded = await embed(services, [piece.text for piece in chunks])
    return Ingested(extracted, chunks, embedded)
