"""The `openai_compat_ocr` engine passes a whole OCR request to an upstream's POST /ocr (here a
small server standing in for the platform): model renamed, uploaded files inlined, the answer
returned as it is, failures mapped like any upstream's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from fastapi import FastAPI

from maestrale.app import create_app
from tests.support.app_fixtures import make_client
from tests.support.app_fixtures import test_settings as settings_for


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    async def ocr(request: web.Request) -> web.Response:
        body = await request.json()
        received.append({"auth": request.headers.get("authorization"), **body})
        if body["document"].get("document_url") == "fail":
            return web.json_response({"message": "boom"}, status=500)
        pages = [
            {"index": 0, "markdown": "upstream text", "images": [], "dimensions": None},
            {"index": 1, "markdown": "more", "images": [], "dimensions": None},
        ]
        return web.json_response(
            {"pages": pages, "model": body["model"], "usage_info": {"pages_processed": 2}}
        )

    app = web.Application()
    app.router.add_post("/v1/ocr", ocr)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1", received
    await runner.cleanup()


@pytest.fixture
async def upstream_app(
    database_url: str,
    tmp_path: Path,
    upstream: tuple[str, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[FastAPI]:
    monkeypatch.setenv("TEST_OCR_UPSTREAM_KEY", "sk-upstream")
    catalog = tmp_path / "models.toml"
    catalog.write_text(
        f"""
[[models]]
id = "remote-ocr"
engine = "openai_compat_ocr"
base_url = "{upstream[0]}"
upstream_model = "mistral-ocr-2505"
api_key_env = "TEST_OCR_UPSTREAM_KEY"
capabilities = ["ocr"]
options = {{ retries = 0 }}
"""
    )
    application = create_app(settings_for(database_url, tmp_path / "data", models=catalog))
    async with application.router.lifespan_context(application):
        yield application


async def test_request_goes_up_and_answer_comes_back(
    upstream_app: FastAPI, upstream: tuple[str, list[dict[str, Any]]]
) -> None:
    _, received = upstream
    async with make_client(upstream_app) as client:
        upload = await client.post(
            "/v1/files",
            files={"file": ("scan.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 20, "image/png")},
            data={"purpose": "ocr"},
        )
        file_id = upload.json()["id"]
        response = await client.post(
            "/v1/ocr",
            json={
                "model": "remote-ocr",
                "document": {"type": "file", "file_id": file_id},
                "pages": [0, 1],
                "include_image_base64": True,
            },
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["model"] == "remote-ocr"
        assert [p["markdown"] for p in body["pages"]] == ["upstream text", "more"]
        (sent,) = received
        assert sent["auth"] == "Bearer sk-upstream"
        assert sent["model"] == "mistral-ocr-2505"
        assert sent["pages"] == [0, 1] and sent["include_image_base64"] is True
        # The upstream cannot read this server's files: the content went up inline.
        assert sent["document"]["type"] == "image_url"
        assert sent["document"]["image_url"].startswith("data:image/png;base64,iVBORw0KGgo")

        failed = await client.post(
            "/v1/ocr",
            json={
                "model": "remote-ocr",
                "document": {"type": "document_url", "document_url": "fail"},
            },
        )
        assert failed.status_code == 502
        assert failed.json()["code"] == "upstream_error"

    await upstream_app.state.services.recorder.flush()
    from sqlalchemy import select

    from maestrale.accounting.tables import UsageRecord

    async with upstream_app.state.services.db.transaction() as work:
        rows = (await work.session.execute(select(UsageRecord))).scalars().all()
    ocr_rows = sorted((r for r in rows if r.endpoint == "ocr"), key=lambda r: r.status_code)
    assert [(r.status_code, r.pages) for r in ocr_rows] == [(200, 2), (500, 0)]


async def test_unreachable_upstream_is_502(database_url: str, tmp_path: Path) -> None:
    catalog = tmp_path / "models.toml"
    catalog.write_text(
        """
[[models]]
id = "remote-ocr"
engine = "openai_compat_ocr"
base_url = "http://127.0.0.1:1/v1"
capabilities = ["ocr"]
options = { retries = 0 }
"""
    )
    app = create_app(settings_for(database_url, tmp_path / "data", models=catalog))
    async with app.router.lifespan_context(app), make_client(app) as client:
        response = await client.post(
            "/v1/ocr",
            json={"model": "remote-ocr", "document": {"document_url": "https://example.com/a.pdf"}},
        )
        assert response.status_code == 502, response.text
