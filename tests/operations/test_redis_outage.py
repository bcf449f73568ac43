"""Redis unreachable (refused, or black-holed: only timeouts tell): the limits fail closed with a
clear 503 and Retry-After, or open when `limits_fail_open` says so, within the Redis timeout
instead of the client's default retries; `/ready` says Redis is unreachable; all recover by
themselves once Redis is back (issue 21). The test's Redis sits behind a fault proxy."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import httpx
import pytest

from tests.operations.conftest import AppFactory
from tests.support.app_fixtures import make_client
from tests.support.databases import copy_sqlite
from tests.support.fault_proxy import FaultProxy

CHAT = {"model": "maestrale-echo", "messages": [{"role": "user", "content": "hello"}]}
TIMEOUT = 0.5  # redis_timeout of these tests
BOUND = 5.0  # twice the timeout (one retry), and a wide margin for a loaded machine


async def chat(client: httpx.AsyncClient) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = await asyncio.wait_for(client.post("/v1/chat/completions", json=CHAT), 120)
    return response, time.monotonic() - started


@pytest.mark.parametrize("fail_open", [False, True], ids=["fail-closed", "fail-open"])
async def test_limits_without_redis_fail_closed_or_open_then_recover(
    redis_proxy: tuple[FaultProxy, str],
    make_app: AppFactory,
    sqlite_template: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    fail_open: bool,
) -> None:
    proxy, redis_url = redis_proxy
    settings = {
        "redis_url": redis_url,
        "redis_timeout": TIMEOUT,
        "limits": {"requests_per_second": 1000},  # every call counted in Redis
        "limits_fail_open": fail_open,
    }
    async with (
        make_app(copy_sqlite(sqlite_template, tmp_path), **settings) as app,
        make_client(app) as client,
        make_client(app, None) as anon,
    ):
        assert (await chat(client))[0].status_code == 200
        assert (await anon.get("/ready")).json()["checks"]["redis"] == "ok"
        # The invalidation channel waits for messages for ever: the commands' timeout must not
        # cut it (each cut would resubscribe and clear the caches).
        with caplog.at_level(logging.WARNING, logger="maestrale.invalidation"):
            await asyncio.sleep(3 * TIMEOUT)
        assert not [r for r in caplog.records if "channel lost" in r.getMessage()]
        for fault in (proxy.down, proxy.blackhole):
            fault()
            for _ in range(3):
                response, seconds = await chat(client)
                assert seconds < BOUND, (fault.__name__, seconds)
                if fail_open:
                    assert response.status_code == 200, response.text
                else:
                    assert response.status_code == 503, response.text
                    assert int(response.headers["retry-after"]) >= 1
                    body = response.json()
                    assert body["code"] == "limits_unavailable"
                    assert "limits cannot be checked" in body["message"]
            started = time.monotonic()
            ready = await anon.get("/ready")
            assert time.monotonic() - started < BOUND
            assert ready.status_code == 503
            assert ready.json() == {
                "status": "not_ready",
                "checks": {"database": "ok", "redis": "unreachable", "blobs": "ok"},
            }
            assert (await anon.get("/health")).status_code == 200
            proxy.up()
            back = time.monotonic()
            while (await chat(client))[0].status_code != 200:
                assert time.monotonic() - back < 5.0
                await asyncio.sleep(0.05)
            while (await anon.get("/ready")).status_code != 200:
                assert time.monotonic() - back < 5.0
                await asyncio.sleep(0.05)
