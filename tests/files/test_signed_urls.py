"""Signed links open a file's content without a key until they expire; altered or expired links
are 403. The secret they are signed with survives restarts and is private to the owner. Files
uploaded with an expiry are removed once it passes."""

from __future__ import annotations

import stat
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.core.clock import utcnow
from maestrale.core.jobs.tables import Job
from maestrale.core.jobs.worker import Worker
from maestrale.core.signing import SECRET_FILE, load_or_create_secret, sign
from maestrale.files.download import signed_message
from maestrale.files.tables import StoredFile
from tests.files.support import jsonl, upload
from tests.support.app_fixtures import make_client

CONTENT = jsonl('{"custom_id": "a", "body": {}}')


async def _signed(client: httpx.AsyncClient, file_id: str, **params: int) -> str:
    resp = await client.get(f"/v1/files/{file_id}/url", params=params)
    assert resp.status_code == 200, resp.text
    return str(resp.json()["url"])


async def test_signed_url_needs_no_key(
    app: FastAPI, client: httpx.AsyncClient, anon_client: httpx.AsyncClient
) -> None:
    file_id = (await upload(client, CONTENT, "in.jsonl", purpose="batch")).json()["id"]
    url = await _signed(client, file_id, expiry=2)
    parts = urlsplit(url)
    assert url.startswith(f"http://test/v1/files/{file_id}/content?")
    expires = int(parse_qs(parts.query)["expires"][0])
    assert abs(expires - (time.time() + 2 * 3600)) < 60
    resp = await anon_client.get(f"{parts.path}?{parts.query}")
    assert resp.status_code == 200
    assert resp.content == CONTENT
    assert resp.headers["content-type"] == "application/octet-stream"
    ranged = await anon_client.get(f"{parts.path}?{parts.query}", headers={"Range": "bytes=0-1"})
    assert ranged.status_code == 206 and ranged.content == CONTENT[:2]
    # Without a signature the same path needs a key.
    assert (await anon_client.get(parts.path)).status_code == 401


async def test_altered_or_expired_links_are_403(
    app: FastAPI, client: httpx.AsyncClient, anon_client: httpx.AsyncClient
) -> None:
    file_id = (await upload(client, CONTENT, purpose="batch")).json()["id"]
    other_id = (await upload(client, CONTENT, purpose="batch")).json()["id"]
    query = parse_qs(urlsplit(await _signed(client, file_id)).query)
    expires, signature = query["expires"][0], query["signature"][0]
    path = f"/v1/files/{file_id}/content"
    for params in [
        {"expires": str(int(expires) + 1), "signature": signature},  # extended
        {"expires": expires, "signature": signature[:-2] + "AA"},  # forged
        {"expires": expires},
        {"expires": "soon", "signature": signature},
        {"expires": "²", "signature": signature},
    ]:
        resp = await anon_client.get(path, params=params)
        assert resp.status_code == 403, params
        assert resp.json()["code"] == "invalid_signature"
    moved = await anon_client.get(
        f"/v1/files/{other_id}/content", params={"expires": expires, "signature": signature}
    )
    assert moved.status_code == 403
    past = int(time.time()) - 10
    expired = sign(app.state.services.secret_key, signed_message(file_id, past))
    resp = await anon_client.get(path, params={"expires": past, "signature": expired})
    assert resp.status_code == 403
    assert resp.json()["code"] == "signature_expired"
    # A valid link of a deleted file: 404.
    await client.delete(f"/v1/files/{file_id}")
    gone = await anon_client.get(path, params={"expires": expires, "signature": signature})
    assert gone.status_code == 404


async def test_expiry_bounds(client: httpx.AsyncClient) -> None:
    file_id = (await upload(client, CONTENT, purpose="batch")).json()["id"]
    for expiry in (0, 169):
        resp = await client.get(f"/v1/files/{file_id}/url", params={"expiry": expiry})
        assert resp.status_code == 400
    assert (await client.get("/v1/files/nope/url")).status_code == 404


async def test_public_url_setting(app: FastAPI, client: httpx.AsyncClient) -> None:
    app.state.settings.public_url = "https://files.example.com/"
    file_id = (await upload(client, CONTENT, purpose="batch")).json()["id"]
    assert (await _signed(client, file_id)).startswith(
        f"https://files.example.com/v1/files/{file_id}/content?expires="
    )


def test_secret_is_generated_once_private_and_configurable(tmp_path: Path) -> None:
    first = load_or_create_secret(tmp_path)
    assert len(first) >= 43
    path = tmp_path / SECRET_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_secret(tmp_path) == first
    assert load_or_create_secret(tmp_path, "configured") == b"configured"


async def test_expired_upload_is_removed(app: FastAPI) -> None:
    async with make_client(app) as client:
        resp = await upload(client, CONTENT, purpose="batch", expiry=1)
        body = resp.json()
        assert abs(body["expires_at"] - (body["created_at"] + 3600)) <= 1
        db = app.state.services.db
        # Let the hour pass.
        past = utcnow() - timedelta(seconds=1)
        async with db.transaction() as work:
            await work.session.execute(
                sa.update(StoredFile).where(StoredFile.id == body["id"]).values(expires_at=past)
            )
            await work.session.execute(
                sa.update(Job).where(Job.kind == "files.expire").values(run_at=past)
            )
        assert (await client.get(f"/v1/files/{body['id']}")).status_code == 404
        worker = Worker(
            db,
            app.state.services.job_registry,
            owner="t",
            concurrency=1,
            lease_seconds=5,
            poll_seconds=0.05,
        )
        await worker.run_until_idle(10)
        async with db.sessionmaker() as session:
            assert await session.get(StoredFile, body["id"]) is None
        root = Path(app.state.settings.resolved_blob_dir)
        assert [p for p in root.rglob("*") if p.is_file()] == []
