"""`/health` is liveness (the process serves; `draining` once told to stop), `/ready` is
readiness (the database, Redis when configured and the blob store answer), each check bounded
(issue 21). The database and Redis outages themselves are in test_database_outage.py and
test_redis_outage.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from tests.operations.conftest import AppFactory
from tests.support.app_fixtures import make_client
from tests.support.fault_proxy import FaultProxy
from tests.support.live import free_port

pytestmark = pytest.mark.both_databases()


async def test_health_and_ready_need_no_key(anon_client: httpx.AsyncClient) -> None:
    health = await anon_client.get("/health")
    assert health.status_code == 200
    assert health.json()["status"] == "ok" and health.json()["version"]
    ready = await anon_client.get("/ready")
    assert ready.status_code == 200, ready.text
    assert ready.json() == {
        "status": "ready",
        "checks": {"database": "ok", "redis": "not_configured", "blobs": "ok"},
    }


async def test_both_say_draining_once_the_process_is_told_to_stop(
    app: FastAPI, anon_client: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    app.state.lifecycle.begin_draining()  # what the server does on SIGTERM
    health = await anon_client.get("/health")
    assert (health.status_code, health.json()) == (503, {"status": "draining"})
    ready = await anon_client.get("/ready")
    assert ready.status_code == 503 and ready.json()["status"] == "draining"
    # The requests that still come meanwhile are served.
    assert (await client.get("/v1/models")).status_code == 200


async def test_ready_says_which_store_is_unreachable(
    app: FastAPI, anon_client: httpx.AsyncClient
) -> None:
    """The blob directory gone (a volume unmounted): not ready, the rest still ok."""
    root: Path = app.state.services.blobs.root
    root.rename(root.with_name("elsewhere"))
    try:
        ready = await anon_client.get("/ready")
        assert ready.status_code == 503
        assert ready.json() == {
            "status": "not_ready",
            "checks": {"database": "ok", "redis": "not_configured", "blobs": "unreachable"},
        }
        assert (await anon_client.get("/health")).status_code == 200
    finally:
        root.with_name("elsewhere").rename(root)
    assert (await anon_client.get("/ready")).status_code == 200


@pytest.fixture
def s3_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FaultProxy, str]]:
    """A moto S3 server with a bucket, behind a fault proxy: (proxy, endpoint through it)."""
    moto_server = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="ready")
        with FaultProxy("127.0.0.1", port) as proxy:
            yield proxy, f"http://127.0.0.1:{proxy.port}"
    finally:
        server.stop()


async def test_ready_checks_the_s3_bucket_within_its_timeout(
    s3_server: tuple[FaultProxy, str], make_app: AppFactory, sqlite_template: Path, tmp_path: Path
) -> None:
    from tests.support.databases import copy_sqlite

    proxy, endpoint = s3_server
    settings = {
        "blob_backend": "s3",
        "s3_bucket": "ready",
        "s3_endpoint_url": endpoint,
        "s3_region": "us-east-1",
    }
    async with (
        make_app(copy_sqlite(sqlite_template, tmp_path), **settings) as app,
        make_client(app, None) as anon,
    ):
        ready = await anon.get("/ready")
        assert ready.status_code == 200 and ready.json()["checks"]["blobs"] == "ok", ready.text
        for fault in (proxy.down, proxy.blackhole):
            fault()
            started = time.monotonic()
            ready = await anon.get("/ready")
            assert time.monotonic() - started < 5.0  # bounded (1 s), whatever the store does
            assert ready.status_code == 503
            assert ready.json()["checks"] == {
                "database": "ok",
                "redis": "not_configured",
                "blobs": "unreachable",
            }
            proxy.up()
        ready = await anon.get("/ready")
        assert ready.status_code == 200
