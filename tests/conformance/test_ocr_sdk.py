"""The official SDK (mistralai==2.8.0) runs `ocr.process` against a live server's local OCR
engine: a PDF as a data URL, an image URL, an uploaded file, page selection, image extraction,
and the errors it raises for a bad page or document."""

from __future__ import annotations

import pytest

pytest.importorskip("pypdfium2")
pytest.importorskip("rapidocr")
pytest.importorskip("fpdf")

from mistralai.client import Mistral
from mistralai.client import models as m
from mistralai.client.errors import SDKError

from tests.conformance.conftest import LiveServer
from tests.ocr import samples

MODEL = "mistral-ocr-latest"  # an alias of the local maestrale-ocr


@pytest.fixture
def sdk(live_server: LiveServer) -> Mistral:
    return Mistral(api_key=live_server.api_key, server_url=live_server.url)


@pytest.fixture(scope="module")
def text_pdf() -> bytes:
    return samples.text_pdf()


def test_process_pdf_data_url(sdk: Mistral, text_pdf: bytes) -> None:
    response = sdk.ocr.process(
        model=MODEL,
        document={
            "type": "document_url",
            "document_url": samples.data_url(text_pdf, "application/pdf"),
        },
        include_image_base64=True,
    )
    assert isinstance(response, m.OCRResponse)
    assert response.model == MODEL
    assert response.usage_info.pages_processed == 2
    assert response.usage_info.doc_size_bytes == len(text_pdf)
    first = response.pages[0]
    assert isinstance(first, m.OCRPageObject) and first.index == 0
    assert first.markdown.startswith(f"# {samples.HEADING}")
    assert "| North | 1200 | 12% |" in first.markdown
    assert first.dimensions is not None and first.dimensions.dpi == 200
    (image,) = first.images
    assert isinstance(image, m.OCRImageObject) and image.id == "img-0.jpeg"
    assert image.top_left_x is not None and image.bottom_right_x is not None
    assert image.top_left_x < image.bottom_right_x
    assert isinstance(image.image_base64, str)
    assert image.image_base64.startswith("data:image/jpeg;base64,")
    assert first.blocks is not None and first.blocks[0].type == "title"


def test_process_image_url_and_pages(sdk: Mistral, text_pdf: bytes) -> None:
    png = samples.render_png(samples.lines_pdf(samples.SCAN_LINES), dpi=150)
    response = sdk.ocr.process(
        model=MODEL,
        document={"type": "image_url", "image_url": samples.data_url(png, "image/png")},
    )
    (page,) = response.pages
    reference = "\n".join(samples.SCAN_LINES)
    assert samples.cer(reference, samples.plain(page.markdown)) < 0.1, page.markdown
    selected = sdk.ocr.process(
        model=MODEL,
        document={
            "type": "document_url",
            "document_url": samples.data_url(text_pdf, "application/pdf"),
        },
        pages=[1],
    )
    assert [p.index for p in selected.pages] == [1]
    assert selected.pages[0].markdown == samples.SECOND_PAGE


def test_process_uploaded_file(sdk: Mistral, text_pdf: bytes) -> None:
    uploaded = sdk.files.upload(
        file={"file_name": "report.pdf", "content": text_pdf}, purpose="ocr"
    )
    assert uploaded.purpose == "ocr"
    response = sdk.ocr.process(
        model=MODEL, document={"type": "file", "file_id": uploaded.id}, pages=[0]
    )
    assert response.pages[0].markdown.startswith(f"# {samples.HEADING}")
    assert response.usage_info.pages_processed == 1


def test_errors(sdk: Mistral, text_pdf: bytes) -> None:
    document = {
        "type": "document_url",
        "document_url": samples.data_url(text_pdf, "application/pdf"),
    }
    with pytest.raises(SDKError) as caught:
        sdk.ocr.process(model=MODEL, document=document, pages=[7])
    assert caught.value.status_code == 400
    with pytest.raises(SDKError) as caught:
        sdk.ocr.process(
            model=MODEL,
            document={"type": "document_url", "document_url": "http://127.0.0.1:1/x.pdf"},
        )
    assert caught.value.status_code == 400 and "url_not_allowed" in caught.value.body
