"""The S3 blob backend against a real S3 server (moto's, started here): the BlobStore contract
(streamed multipart writes, ranges, limits that store nothing), and the files API and a batch
job running on it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.core.blobs import BlobStore, BlobTooLarge
from maestrale.core.blobs_s3 import MIN_PART, S3BlobStore
from tests.batch.support import chat_line, create_job, input_file, jsonl_file, run_jobs
from tests.files.support import upload
from tests.support.app_fixtures import make_client
from tests.support.app_fixtures import test_settings as settings_for
from tests.support.live import free_port

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A moto S3 server on a free port, with fake credentials in the environment."""
    saved = {name: os.environ.get(name) for name in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    port = free_port()
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, "moto server exited"
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "moto server did not start"
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _bucket(endpoint: str, name: str) -> str:
    import boto3

    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def _read(store: BlobStore, key: str, **kw: int) -> bytes:
    return b"".join([chunk async for chunk in store.get(key, **kw)])


def _objects(store: S3BlobStore) -> list[str]:
    listed = store.client.list_objects_v2(Bucket=store.bucket)
    return [o["Key"] for o in listed.get("Contents", [])]


def _uploads(store: S3BlobStore) -> list[str]:
    listed = store.client.list_multipart_uploads(Bucket=store.bucket)
    return [u["Key"] for u in listed.get("Uploads", [])]


async def test_contract(s3_endpoint: str) -> None:
    store = S3BlobStore(_bucket(s3_endpoint, "contract"), endpoint_url=s3_endpoint, prefix="p/")
    assert isinstance(store, BlobStore)
    assert await store.put("ws/a/file.bin", _chunks(b"hello ", b"world")) == 11
    assert _objects(store) == ["p/ws/a/file.bin"]
    assert await store.size("ws/a/file.bin") == 11
    assert await _read(store, "ws/a/file.bin") == b"hello world"
    assert await _read(store, "ws/a/file.bin", start=6) == b"world"
    assert await _read(store, "ws/a/file.bin", start=2, end=5) == b"llo"
    assert await _read(store, "ws/a/file.bin", start=11) == b""
    assert await store.delete("ws/a/file.bin") is True
    assert await store.delete("ws/a/file.bin") is False
    assert await store.size("ws/a/file.bin") is None
    with pytest.raises(KeyError):
        await _read(store, "ws/a/file.bin")
    with pytest.raises(ValueError, match="invalid blob key"):
        await store.put("../escape", _chunks(b"x"))
    assert await store.put("empty", _chunks()) == 0
    assert await _read(store, "empty") == b""


async def test_multipart_streaming_and_limits(s3_endpoint: str) -> None:
    store = S3BlobStore(_bucket(s3_endpoint, "multipart"), endpoint_url=s3_endpoint)
    piece = bytes(range(256)) * 4096  # 1 MiB
    count = 12  # spans three parts of MIN_PART (5 MiB)
    store.part_size = MIN_PART
    size = await store.put("big", _chunks(*([piece] * count)))
    assert size == count * len(piece)
    assert await store.size("big") == size
    middle = MIN_PART - 3
    assert (
        await _read(store, "big", start=middle, end=middle + 6) == (piece * 6)[middle : middle + 6]
    )
    assert await _read(store, "big") == piece * count
    # Over the limit in the middle of the upload: nothing visible, the parts dropped.
    with pytest.raises(BlobTooLarge):
        await store.put("too-big", _chunks(*([piece] * count)), max_bytes=7 * len(piece))
    assert await store.size("too-big") is None
    assert _uploads(store) == []
    # A failing source aborts the upload too.

    async def failing() -> AsyncIterator[bytes]:
        for _ in range(6):
            yield piece
        raise RuntimeError("client went away")

    with pytest.raises(RuntimeError):
        await store.put("broken", failing())
    assert await store.size("broken") is None and _uploads(store) == []
    with pytest.raises(ValueError, match="part_size"):
        S3BlobStore("x", endpoint_url=s3_endpoint, part_size=1024)


@pytest.fixture
async def s3_app(s3_endpoint: str, database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    bucket = _bucket(s3_endpoint, f"app-{os.urandom(4).hex()}")
    settings = settings_for(
        database_url,
        tmp_path / "data",
        blob_backend="s3",
        s3_bucket=bucket,
        s3_endpoint_url=s3_endpoint,
        s3_region="us-east-1",
        max_upload_bytes=2_000_000,
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def test_files_and_batch_on_s3(s3_app: FastAPI) -> None:
    store = s3_app.state.services.blobs
    assert isinstance(store, S3BlobStore)
    async with make_client(s3_app) as client:
        data = os.urandom(1_500_000)
        created = await upload(client, data, "blob.bin", purpose="ocr")
        assert created.status_code == 200
        file_id = created.json()["id"]
        got = await client.get(f"/v1/files/{file_id}/content")
        assert got.content == data
        part = await client.get(f"/v1/files/{file_id}/content", headers={"Range": "bytes=100-199"})
        assert part.status_code == 206 and part.content == data[100:200]
        too_big = await upload(client, os.urandom(2_100_000), "huge.bin", purpose="ocr")
        assert too_big.status_code == 413
        assert len(_objects(store)) == 1 and _uploads(store) == []

        batch_input = await input_file(client, chat_line("a", "one"), chat_line("b", "/fail 400"))
        job = await create_job(client, input_files=[batch_input])
        await run_jobs(s3_app)
        done = (await client.get(f"/v1/batch/jobs/{job['id']}")).json()
        assert done["status"] == "SUCCESS"
        assert [o["custom_id"] for o in await jsonl_file(client, done["output_file"])] == ["a"]
        assert [e["custom_id"] for e in await jsonl_file(client, done["error_file"])] == ["b"]

        await client.delete(f"/v1/files/{file_id}")
        assert all(file_id not in key for key in _objects(store))


def test_s3_backend_needs_a_bucket(tmp_path: Path) -> None:
    from maestrale.services import make_blob_store

    settings = settings_for("sqlite+aiosqlite:///x", tmp_path, blob_backend="s3")
    with pytest.raises(ValueError, match="MAESTRALE_S3_BUCKET"):
        make_blob_store(settings)
