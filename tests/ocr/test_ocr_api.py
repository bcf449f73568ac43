"""POST /v1/ocr against the local RapidOCR engine: PDFs with a text layer, scanned PDFs, images,
uploaded files, page selection, images and their boxes, annotations, errors and SSRF."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web
from fastapi import FastAPI

pytest.importorskip("pypdfium2")
pytest.importorskip("rapidocr")
pytest.importorskip("fpdf")

from PIL import Image

from tests.ocr import samples
from tests.ocr.conftest import OCR_MODEL, AppFactory
from tests.support.app_fixtures import create_tenant, make_client

PDF_URL = "data:application/pdf;base64,"


def pdf_document(content: bytes) -> dict[str, Any]:
    return {"type": "document_url", "document_url": samples.data_url(content, "application/pdf")}


async def ocr(client: httpx.AsyncClient, **body: Any) -> httpx.Response:
    return await client.post("/v1/ocr", json={"model": OCR_MODEL, **body})


@pytest.fixture(scope="module")
def text_pdf() -> bytes:
    return samples.text_pdf()


@pytest.fixture(scope="module")
def scan_png() -> bytes:
    return samples.render_png(samples.lines_pdf(samples.SCAN_LINES), dpi=150)


@pytest.fixture
async def local_site(text_pdf: bytes) -> AsyncIterator[str]:
    async def document(_: web.Request) -> web.Response:
        return web.Response(body=text_pdf, content_type="application/pdf")

    site_app = web.Application()
    site_app.router.add_get("/report.pdf", document)
    runner = web.AppRunner(site_app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def test_text_layer_pdf_gives_markdown_dimensions_and_images(
    ocr_client: httpx.AsyncClient, text_pdf: bytes
) -> None:
    response = await ocr(ocr_client, document=pdf_document(text_pdf))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model"] == OCR_MODEL
    assert body["usage_info"] == {"pages_processed": 2, "doc_size_bytes": len(text_pdf)}
    assert body["document_annotation"] is None
    first, second = body["pages"]
    assert [first["index"], second["index"]] == [0, 1]
    # A4 at 200 dpi.
    assert first["dimensions"] == {"dpi": 200, "height": 2339, "width": 1654}
    markdown = first["markdown"]
    assert markdown.startswith(f"# {samples.HEADING}\n\n{samples.PARAGRAPH}\n\n")
    assert "| Region | Sales | Growth |\n| --- | --- | --- |\n| North | 1200 | 12% |" in markdown
    assert "| South | 950 | 8% |" in markdown
    # The figure: 50 mm wide at x = 20 mm, y = 120 mm (200 dpi: 1 mm = 7.874 px).
    (image,) = first["images"]
    assert image["id"] == "img-0.jpeg"
    assert abs(image["top_left_x"] - 157) <= 2 and abs(image["top_left_y"] - 945) <= 2
    assert abs(image["bottom_right_x"] - 551) <= 2
    assert image["image_base64"] is None
    assert markdown.endswith("![img-0.jpeg](img-0.jpeg)")
    assert second["markdown"] == samples.SECOND_PAGE and second["images"] == []
    kinds = [block["type"] for block in first["blocks"]]
    assert kinds == ["title", "text", "table", "image"]
    assert first["blocks"][3]["image_id"] == "img-0.jpeg"


async def test_scanned_pdf_is_recognised(
    sqlite_ocr_client: httpx.AsyncClient, scan_png: bytes
) -> None:
    scanned = samples.scanned_pdf(scan_png)
    response = await ocr(sqlite_ocr_client, document=pdf_document(scanned))
    assert response.status_code == 200, response.text
    (page,) = response.json()["pages"]
    reference = "\n".join(samples.SCAN_LINES)
    assert samples.cer(reference, samples.plain(page["markdown"])) < 0.1, page["markdown"]
    # The scan itself is the page, not a figure on it.
    assert page["images"] == []
    assert page["dimensions"]["dpi"] == 200


async def test_image_url_png_and_jpeg(
    sqlite_ocr_client: httpx.AsyncClient, scan_png: bytes
) -> None:
    reference = "\n".join(samples.SCAN_LINES)
    jpeg = io.BytesIO()
    Image.open(io.BytesIO(scan_png)).save(jpeg, format="JPEG", quality=90)
    for content, mimetype in ((scan_png, "image/png"), (jpeg.getvalue(), "image/jpeg")):
        url = samples.data_url(content, mimetype)
        response = await ocr(sqlite_ocr_client, document={"type": "image_url", "image_url": url})
        assert response.status_code == 200, response.text
        (page,) = response.json()["pages"]
        assert samples.cer(reference, samples.plain(page["markdown"])) < 0.1, page["markdown"]
        width, height = Image.open(io.BytesIO(content)).size
        assert (page["dimensions"]["width"], page["dimensions"]["height"]) == (width, height)
        assert response.json()["usage_info"]["pages_processed"] == 1


async def test_pages_selection_and_errors(ocr_client: httpx.AsyncClient, text_pdf: bytes) -> None:
    response = await ocr(ocr_client, document=pdf_document(text_pdf), pages=[1])
    assert response.status_code == 200, response.text
    assert [p["index"] for p in response.json()["pages"]] == [1]
    assert response.json()["usage_info"]["pages_processed"] == 1
    response = await ocr(ocr_client, document=pdf_document(text_pdf), pages="1,0")
    assert [p["index"] for p in response.json()["pages"]] == [1, 0]
    for pages in ([2], [-1], "0-9", "one"):
        response = await ocr(ocr_client, document=pdf_document(text_pdf), pages=pages)
        assert response.status_code == 400, (pages, response.text)
        assert response.json()["code"] == "invalid_pages"


async def test_too_many_pages_is_413(ocr_app_factory: AppFactory, text_pdf: bytes) -> None:
    app = await ocr_app_factory(ocr_max_pages=1)
    async with make_client(app) as client:
        response = await ocr(client, document=pdf_document(text_pdf))
        assert response.status_code == 413
        assert response.json()["code"] == "too_many_pages"
        assert (await ocr(client, document=pdf_document(text_pdf), pages=[0])).status_code == 200


async def test_image_options(ocr_client: httpx.AsyncClient, text_pdf: bytes) -> None:
    response = await ocr(ocr_client, document=pdf_document(text_pdf), include_image_base64=True)
    (image,) = response.json()["pages"][0]["images"]
    prefix = "data:image/jpeg;base64,"
    assert image["image_base64"].startswith(prefix)
    decoded = Image.open(io.BytesIO(base64.b64decode(image["image_base64"][len(prefix) :])))
    assert decoded.size[0] >= 199 and decoded.format == "JPEG"
    # The figure is 394 px wide at 200 dpi: a larger minimum drops it, as does a limit of 0.
    for options in ({"image_min_size": 400}, {"image_limit": 0}):
        response = await ocr(ocr_client, document=pdf_document(text_pdf), **options)
        page = response.json()["pages"][0]
        assert page["images"] == [], options
        assert "![" not in page["markdown"]
    response = await ocr(ocr_client, document=pdf_document(text_pdf), image_min_size=100)
    assert len(response.json()["pages"][0]["images"]) == 1


async def test_table_format_and_confidence(ocr_client: httpx.AsyncClient, text_pdf: bytes) -> None:
    response = await ocr(
        ocr_client,
        document=pdf_document(text_pdf),
        pages=[0],
        table_format="html",
        confidence_scores_granularity="word",
    )
    assert response.status_code == 200, response.text
    page = response.json()["pages"][0]
    (table,) = page["tables"]
    assert table["id"] == "tbl-0.html" and table["format"] == "html"
    assert table["content"].startswith("<table><tr><th>Region</th>")
    assert "[tbl-0.html](tbl-0.html)" in page["markdown"]
    scores = page["confidence_scores"]
    assert scores["minimum_page_confidence_score"] == 1.0  # a text layer is certain
    first = scores["word_confidence_scores"][0]
    assert first == {"text": "Quarterly", "confidence": 1.0, "start_index": 2}
    # mistralai 3.x's third granularity: scores per block, even without `include_blocks`.
    response = await ocr(
        ocr_client,
        document=pdf_document(text_pdf),
        pages=[0],
        include_blocks=False,
        confidence_scores_granularity="block",
    )
    assert response.status_code == 200, response.text
    blocks = response.json()["pages"][0]["blocks"]
    assert blocks[0]["confidence_scores"] == {
        "average_content_confidence_score": 1.0,
        "minimum_content_confidence_score": 1.0,
        "block_type_confidence_score": None,
    }


async def test_uploaded_file_and_other_workspace(
    ocr_app: FastAPI, ocr_client: httpx.AsyncClient, text_pdf: bytes
) -> None:
    upload = await ocr_client.post(
        "/v1/files",
        files={"file": ("report.pdf", text_pdf, "application/pdf")},
        data={"purpose": "ocr"},
    )
    assert upload.status_code == 200, upload.text
    file_id = upload.json()["id"]
    response = await ocr(ocr_client, document={"type": "file", "file_id": file_id}, pages=[0])
    assert response.status_code == 200, response.text
    assert response.json()["pages"][0]["markdown"].startswith(f"# {samples.HEADING}")
    other = await create_tenant(ocr_app.state.services.db)
    async with make_client(ocr_app, other.key) as foreign:
        response = await ocr(foreign, document={"type": "file", "file_id": file_id})
        assert response.status_code == 404
        assert response.json()["code"] == "file_not_found"


async def test_document_url_to_loopback_is_refused_unless_configured(
    ocr_app_factory: AppFactory, local_site: str
) -> None:
    url = f"{local_site}/report.pdf"
    refusing = await ocr_app_factory()
    async with make_client(refusing) as client:
        response = await ocr(client, document={"type": "document_url", "document_url": url})
        assert response.status_code == 400
        assert response.json()["code"] == "url_not_allowed"
        link_local = "http://169.254.169.254/latest/meta-data"
        response = await ocr(client, document={"type": "document_url", "document_url": link_local})
        assert response.json()["code"] == "url_not_allowed"
        response = await ocr(client, document={"type": "image_url", "image_url": {"url": url}})
        assert response.json()["code"] == "url_not_allowed"
    allowing = await ocr_app_factory(fetch_allow_private=True)
    async with make_client(allowing) as client:
        response = await ocr(
            client, document={"type": "document_url", "document_url": url}, pages=[0]
        )
        assert response.status_code == 200, response.text
        assert samples.HEADING in response.json()["pages"][0]["markdown"]
    small = await ocr_app_factory(fetch_allow_private=True, fetch_max_bytes=1000)
    async with make_client(small) as client:
        response = await ocr(client, document={"type": "document_url", "document_url": url})
        assert response.status_code == 413


async def test_bad_documents_and_models(ocr_client: httpx.AsyncClient) -> None:
    not_a_document = samples.data_url(b"hello, world", "text/plain")
    response = await ocr(
        ocr_client, document={"type": "document_url", "document_url": not_a_document}
    )
    assert response.status_code == 400 and response.json()["code"] == "unsupported_document"
    broken = samples.data_url(b"%PDF-1.7\n garbage", "application/pdf")
    response = await ocr(ocr_client, document={"type": "document_url", "document_url": broken})
    assert response.status_code == 400 and response.json()["code"] == "invalid_document"
    broken_png = samples.data_url(b"\x89PNG\r\n\x1a\n" + b"0" * 40, "image/png")
    response = await ocr(ocr_client, document={"type": "image_url", "image_url": broken_png})
    assert response.status_code == 400 and response.json()["code"] == "invalid_document"
    response = await ocr(ocr_client, document={"type": "document_url", "document_url": "ftp://x/y"})
    assert response.status_code == 400 and response.json()["code"] == "url_not_allowed"
    response = await ocr_client.post(
        "/v1/ocr",
        json={"model": "maestrale-echo", "document": {"document_url": not_a_document}},
    )
    assert response.status_code == 400 and response.json()["code"] == "model_capability_missing"
    response = await ocr_client.post(
        "/v1/ocr", json={"model": "nope", "document": {"document_url": not_a_document}}
    )
    assert response.status_code == 404
    response = await ocr_client.post("/v1/ocr", json={"model": OCR_MODEL, "document": {}})
    assert response.status_code == 422


async def test_annotations_come_from_the_chat_model(
    ocr_client: httpx.AsyncClient, text_pdf: bytes
) -> None:
    schema = {
        "type": "object",
        "properties": {"title": {"type": "string"}, "pages": {"type": "integer", "minimum": 1}},
        "required": ["title", "pages"],
    }
    image_schema = {
        "type": "object",
        "properties": {"kind": {"type": "string", "enum": ["chart", "photo"]}},
        "required": ["kind"],
    }
    response = await ocr(
        ocr_client,
        document=pdf_document(text_pdf),
        document_annotation_format={
            "type": "json_schema",
            "json_schema": {"name": "doc", "schema": schema, "strict": True},
        },
        bbox_annotation_format={
            "type": "json_schema",
            "json_schema": {"name": "img", "schema": image_schema},
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    # The builtin echo model answers a json_schema format with the schema's smallest instance.
    assert json.loads(body["document_annotation"]) == {"title": "echo", "pages": 1}
    (image,) = body["pages"][0]["images"]
    assert json.loads(image["image_annotation"]) == {"kind": "chart"}
    response = await ocr(
        ocr_client, document=pdf_document(text_pdf), document_annotation_format={"type": "text"}
    )
    assert response.status_code == 400 and response.json()["code"] == "invalid_response_format"


async def test_usage_is_recorded_with_pages(ocr_app: FastAPI, text_pdf: bytes) -> None:
    from sqlalchemy import select

    from maestrale.accounting.tables import UsageRecord

    async with make_client(ocr_app) as client:
        response = await ocr(client, document=pdf_document(text_pdf))
        assert response.status_code == 200
    await ocr_app.state.services.recorder.flush()
    async with ocr_app.state.services.db.transaction() as work:
        rows = (await work.session.execute(select(UsageRecord))).scalars().all()
    ocr_rows = [row for row in rows if row.endpoint == "ocr"]
    assert len(ocr_rows) == 1
    assert ocr_rows[0].pages == 2 and ocr_rows[0].model == OCR_MODEL
