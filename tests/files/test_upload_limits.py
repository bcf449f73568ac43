"""The upload limit is enforced while streaming: 413 and nothing stored, whether the body
announces its size or not; bodies under it go through whole."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from tests.files.support import upload
from tests.support.app_fixtures import make_client
from tests.support.app_fixtures import test_settings as settings_for

LIMIT = 100_000


@pytest.fixture
async def small_app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    application = create_app(settings_for(database_url, tmp_path / "data", max_upload_bytes=LIMIT))
    async with application.router.lifespan_context(application):
        yield application


def stored(app: FastAPI) -> list[Path]:
    root = Path(app.state.settings.resolved_blob_dir)
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


@pytest.mark.parametrize(
    "size",
    [
        LIMIT + 1,  # within the framing slack: refused while streaming
        LIMIT * 10,  # refused from the Content-Length before reading
    ],
)
async def test_oversize_upload_is_413_and_stores_nothing(small_app: FastAPI, size: int) -> None:
    async with make_client(small_app) as client:
        resp = await upload(client, b"x" * size, "big.bin", purpose="ocr")
        assert resp.status_code == 413
        assert resp.json()["code"] == "payload_too_large"
        assert str(LIMIT) in resp.json()["message"]
        assert (await client.get("/v1/files")).json()["total"] == 0
    assert stored(small_app) == []


async def test_oversize_chunked_upload_without_length(small_app: FastAPI) -> None:
    boundary = "zz"

    async def body() -> AsyncIterator[bytes]:
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n\r\n'
        ).encode()
        for _ in range(30):
            yield b"y" * 10_000
        yield f"\r\n--{boundary}--\r\n".encode()

    async with make_client(small_app) as client:
        resp = await client.post(
            "/v1/files",
            content=body(),
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )
    assert resp.status_code == 413
    assert stored(small_app) == []


async def test_upload_at_the_limit_is_stored(small_app: FastAPI) -> None:
    async with make_client(small_app) as client:
        resp = await upload(client, b"z" * LIMIT, "exact.bin", purpose="ocr")
        assert resp.status_code == 200
        assert resp.json()["bytes"] == LIMIT
        got = await client.get(f"/v1/files/{resp.json()['id']}/content")
        assert len(got.content) == LIMIT
    assert len(stored(small_app)) == 1


async def test_long_lines_are_counted_not_buffered(client: httpx.AsyncClient) -> None:
    from maestrale.files import lines

    big = b'{"text": "' + b"a" * (lines.MAX_LINE_BYTES + 10) + b'"}\n{"text": "b"}\n'
    resp = await upload(client, big, "long.jsonl", purpose="batch")
    assert resp.status_code == 200
    assert resp.json()["num_lines"] == 2
    refused = await upload(client, big, "long.jsonl", purpose="fine-tune")
    assert refused.status_code == 400
    assert "line 1 is longer than" in refused.json()["message"]
