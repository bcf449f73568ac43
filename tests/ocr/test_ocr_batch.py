"""Batch jobs on `/v1/ocr`, with annotations: each line is answered as POST /v1/ocr would answer
it (uploaded files of the job's workspace, data URLs, the fetch policy, annotations by the chat
model), limited and accounted as a batch call, with no database connection held while a model
runs (the tests' strict guard would fail the line)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import orjson
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

pytest.importorskip("pypdfium2")
pytest.importorskip("rapidocr")
pytest.importorskip("fpdf")

from maestrale.accounting.tables import UsageRecord
from tests.batch.support import create_job, input_file, jsonl_file, run_jobs
from tests.ocr import samples
from tests.support.app_fixtures import create_tenant, make_client

# The platform's batch guide names the model so; it is an alias of the local maestrale-ocr.
MODEL = "mistral-ocr-latest"
DOCUMENT_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "document_annotation",
        "schema": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "pages": {"type": "integer", "minimum": 1}},
            "required": ["title", "pages"],
        },
        "strict": True,
    },
}
BBOX_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "bbox_annotation",
        "schema": {
            "type": "object",
            "properties": {"kind": {"type": "string", "enum": ["chart", "photo"]}},
            "required": ["kind"],
        },
    },
}


def line(custom_id: str, **body: Any) -> str:
    return orjson.dumps({"custom_id": custom_id, "body": body}).decode()


async def test_ocr_lines_with_annotations(ocr_app: FastAPI, ocr_client: httpx.AsyncClient) -> None:
    text_pdf = samples.text_pdf()
    scan = samples.render_png(samples.lines_pdf(samples.SCAN_LINES[:2]), dpi=150)
    upload = await ocr_client.post(
        "/v1/files",
        files={"file": ("report.pdf", text_pdf, "application/pdf")},
        data={"purpose": "ocr"},
    )
    assert upload.status_code == 200, upload.text
    file_id = upload.json()["id"]
    other = await create_tenant(ocr_app.state.services.db)
    async with make_client(ocr_app, other.key) as foreign:
        theirs = await foreign.post(
            "/v1/files",
            files={"file": ("theirs.pdf", text_pdf, "application/pdf")},
            data={"purpose": "ocr"},
        )
    batch_file = await input_file(
        ocr_client,
        line(
            "annotated",
            document={"type": "file", "file_id": file_id},
            document_annotation_format=DOCUMENT_SCHEMA,
            bbox_annotation_format=BBOX_SCHEMA,
            pages=[0],
            include_image_base64=False,
        ),
        line("scan", document={"image_url": samples.data_url(scan, "image/png")}),
        line(
            "data-url",
            document={
                "type": "document_url",
                "document_url": samples.data_url(text_pdf, "application/pdf"),
            },
            pages=[1],
        ),
        line(
            "loopback",
            document={"type": "document_url", "document_url": "http://127.0.0.1:9/a.pdf"},
        ),
        line("foreign-file", document={"type": "file", "file_id": theirs.json()["id"]}),
        line("no-document", pages=[0]),
    )
    job = await create_job(ocr_client, endpoint="/v1/ocr", model=MODEL, input_files=[batch_file])
    await run_jobs(ocr_app, timeout=120)
    done = (await ocr_client.get(f"/v1/batch/jobs/{job['id']}")).json()
    assert done["status"] == "SUCCESS", done
    assert (done["succeeded_requests"], done["failed_requests"]) == (3, 3)

    outputs = {
        o["custom_id"]: o["response"] for o in await jsonl_file(ocr_client, done["output_file"])
    }
    errors = {e["custom_id"]: e for e in await jsonl_file(ocr_client, done["error_file"])}
    annotated = outputs["annotated"]
    assert annotated["status_code"] == 200
    body = annotated["body"]
    assert body["model"] == MODEL
    assert body["pages"][0]["markdown"].startswith(f"# {samples.HEADING}")
    assert body["usage_info"]["pages_processed"] == 1
    # The annotations come from the chat model (the builtin echo in these tests).
    assert json.loads(body["document_annotation"]) == {"title": "echo", "pages": 1}
    (image,) = body["pages"][0]["images"]
    assert json.loads(image["image_annotation"]) == {"kind": "chart"}
    assert image["image_base64"] is None
    scanned = outputs["scan"]["body"]["pages"][0]["markdown"]
    assert samples.cer(" ".join(samples.SCAN_LINES[:2]), samples.plain(scanned)) < 0.1
    assert samples.SECOND_PAGE in outputs["data-url"]["body"]["pages"][0]["markdown"]
    assert errors["loopback"]["response"]["status_code"] == 400
    assert errors["loopback"]["error"]["code"] == "url_not_allowed"
    assert errors["foreign-file"]["response"]["status_code"] == 404
    assert errors["no-document"]["response"]["status_code"] == 422

    # Each recognised document is a batch call of the job, counted in pages; the annotations
    # are chat calls correlated to the job too.
    await ocr_app.state.services.recorder.flush()
    async with ocr_app.state.services.db.transaction() as work:
        rows = (
            await work.session.execute(
                sa.select(UsageRecord.endpoint, UsageRecord.source, UsageRecord.status_code).where(
                    UsageRecord.correlation_id == job["id"]
                )
            )
        ).all()
    ocr_rows = sorted((status, source) for endpoint, source, status in rows if endpoint == "ocr")
    assert ocr_rows[:3] == [(200, "batch")] * 3
    assert all(source == "batch" for _, source in ocr_rows)
    assert sum(1 for endpoint, _, _ in rows if endpoint == "chat") == 2
