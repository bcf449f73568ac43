"""A database that cannot be reached (refused, cut mid-request, black-holed, its pool
exhausted) gets every route a clean 503 with `Retry-After`, never a 500 and never a hung
request; service returns by itself once the database is back, and the accounting rows of the
calls served meanwhile are written then (issue 21).

The Postgres of each test sits behind a fault proxy (`tests.support.fault_proxy`); the bounds
on durations below are liveness bounds (seconds where the failure was a hang or minutes), not
benchmarks."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text

from maestrale.core import db as db_module
from maestrale.core.db import create_engine
from tests.operations.conftest import AppFactory
from tests.support.app_fixtures import ADMIN_KEY, API_KEY, make_client
from tests.support.fault_proxy import FaultProxy
from tests.support.live import start_server, stop_server

CHAT = {"model": "maestrale-echo", "messages": [{"role": "user", "content": "hello"}]}
# Seconds a request may take when the database cannot be reached: the connect timeout the
# tests set (1 s), or the pool's / the statement's, and a wide margin for a loaded machine.
BOUND = 6.0


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, (response.request.url, response.text)
    assert response.headers["retry-after"] == "5"
    body = response.json()
    assert body["object"] == "error" and body["code"] == "database_unavailable", body
    assert body["type"] == "api_error" and "database" in body["message"]


async def timed(request: Any) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = await asyncio.wait_for(request, 60)  # a hang fails the test, not the run
    return response, time.monotonic() - started


def requests(client: httpx.AsyncClient, admin: httpx.AsyncClient) -> dict[str, Any]:
    """One route of each kind: a tenant's list, a model call, an admin route."""
    return {
        "files": lambda: client.get("/v1/files"),
        "chat": lambda: client.post("/v1/chat/completions", json=CHAT),
        "admin": lambda: admin.get("/v1/admin/workspaces"),
    }


@pytest.mark.parametrize("fault", ["refused", "cut", "blackhole"])
async def test_every_kind_of_route_answers_503_with_retry_after(
    pg_proxy: tuple[FaultProxy, str], make_app: AppFactory, fault: str
) -> None:
    """Keys verified on every request (no cache), so that every route needs the database."""
    proxy, url = pg_proxy
    async with (
        make_app(url, auth_cache_ttl=0, database_connect_timeout=1.0) as app,
        make_client(app) as client,
        make_client(app, None) as admin,
    ):
        admin.headers["x-api-key"] = ADMIN_KEY
        for name, request in requests(client, admin).items():
            warm = await request()  # the pool holds live connections now
            assert warm.status_code == 200, (name, warm.text)
            if fault == "refused":
                proxy.down()
            elif fault == "cut":
                proxy.cut()  # through a pooled connection the server no longer has
            else:  # new connections time out (pooled ones: the statement timeout, below)
                await app.state.services.db.engine.dispose()
                proxy.blackhole()
            response, seconds = await timed(request())
            assert_unavailable(response)
            assert seconds < BOUND, (name, seconds)
            proxy.up()


@pytest.mark.parametrize("cached", [False, True], ids=["keys-read", "keys-cached"])
async def test_no_route_answers_500_while_the_database_is_down(
    pg_proxy: tuple[FaultProxy, str], make_app: AppFactory, cached: bool
) -> None:
    """Every operation of the API (ids made up, a small body), with a standard key or an admin
    one: none answers a 500; those that needed the database a 503 with Retry-After. With keys
    cached (as on a busy replica) the requests get past authentication, into the services."""
    proxy, url = pg_proxy
    ttl = 60 if cached else 0
    async with (
        make_app(
            url, auth_cache_ttl=ttl, limits_cache_ttl=ttl, database_connect_timeout=1.0
        ) as app,
        make_client(app) as client,
    ):
        operations = api_operations(app)
        assert len(operations) > 100
        admin = {"x-api-key": ADMIN_KEY}
        await client.get("/v1/models")  # both keys verified (and cached, with a ttl)
        await client.get("/v1/admin/workspaces", headers=admin)
        proxy.down()
        unavailable = 0
        for method, path in operations:
            body = CHAT if "completions" in path else SMALL_BODY
            response, seconds = await timed(
                client.request(
                    method,
                    path,
                    headers=admin if path.startswith("/v1/admin") else None,
                    json=None if method == "GET" else body,
                )
            )
            assert seconds < BOUND, (method, path, seconds)
            assert response.status_code < 500 or response.status_code == 503, (
                method,
                path,
                response.text,
            )
            if response.status_code == 503 and "database" in response.text:
                # (in the body of the route's group: the workflows API has its own)
                assert response.headers["retry-after"] == "5", (method, path)
                unavailable += 1
        assert unavailable > len(operations) // 3


SMALL_BODY = {"model": "maestrale-echo", "input": "hi", "inputs": "hi", "name": "x"}


def api_operations(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path) of every operation of the API, path parameters filled with made-up ids."""
    methods = ("get", "post", "put", "patch", "delete")
    return sorted(
        (method.upper(), re.sub(r"[{}]", "", path))
        for path, operations in app.openapi()["paths"].items()
        if path.startswith("/v1/")
        for method in operations
        if method in methods
    )


async def test_an_exhausted_pool_is_a_503_after_the_pool_timeout(
    pg_proxy: tuple[FaultProxy, str], make_app: AppFactory
) -> None:
    _, url = pg_proxy
    settings = {"auth_cache_ttl": 0, "database_pool_size": 1, "database_pool_timeout": 0.5}
    async with make_app(url, **settings) as app, make_client(app) as client:
        engine = app.state.services.db.engine
        # Pool size 1 and as many overflow connections: two held, none left.
        async with engine.connect() as first, engine.connect() as second:
            await first.execute(text("SELECT 1"))
            await second.execute(text("SELECT 1"))
            response, seconds = await timed(client.get("/v1/files"))
            assert_unavailable(response)
            assert 0.4 < seconds < BOUND, seconds
        assert (await client.get("/v1/files")).status_code == 200


async def test_a_statement_without_answer_is_a_503_after_the_statement_timeout(
    pg_proxy: tuple[FaultProxy, str], make_app: AppFactory
) -> None:
    """A database cut off the network: the pooled connections stay open, nothing answers."""
    proxy, url = pg_proxy
    settings = {
        "auth_cache_ttl": 0,
        "database_connect_timeout": 1.0,
        "database_statement_timeout": 1.0,
    }
    async with make_app(url, **settings) as app, make_client(app) as client:
        assert (await client.get("/v1/files")).status_code == 200
        proxy.blackhole()
        response, seconds = await timed(client.get("/v1/files"))
        assert_unavailable(response)
        assert seconds < BOUND, seconds
        proxy.up()
        assert (await client.get("/v1/files")).status_code == 200


async def test_an_idle_connection_to_a_silent_database_is_given_up_after_the_connect_timeout(
    pg_proxy: tuple[FaultProxy, str], make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pooled connection that sat idle is pinged before use: when the database is cut off
    the network, the ping gives up after the connect timeout, not the statement timeout."""
    monkeypatch.setattr(db_module, "PING_AFTER_IDLE_SECONDS", 0.0)  # every checkout pings
    proxy, url = pg_proxy
    settings = {"auth_cache_ttl": 0, "database_connect_timeout": 1.0}  # statements: 60 s
    async with make_app(url, **settings) as app, make_client(app) as client:
        assert (await client.get("/v1/files")).status_code == 200
        proxy.blackhole()
        response, seconds = await timed(client.get("/v1/files"))
        assert_unavailable(response)
        assert seconds < BOUND, seconds


async def test_service_returns_without_restart_and_no_accounting_row_is_lost(
    pg_url: str, pg_proxy: tuple[FaultProxy, str], make_app: AppFactory
) -> None:
    """Keys and limits cached (as on a busy replica): model calls go on during the outage with
    their accounting buffered; what needs the database answers 503 and /ready says so; once
    the database is back, every route and /ready recover within 5 s, and every call served is
    recorded (usage and event), none lost."""
    proxy, url = pg_proxy
    settings = {"auth_cache_ttl": 60, "limits_cache_ttl": 60, "database_connect_timeout": 1.0}
    async with (
        make_app(url, **settings) as app,
        make_client(app) as client,
        make_client(app, None) as anon,
    ):
        served = 0
        for _ in range(5):
            assert (await client.post("/v1/chat/completions", json=CHAT)).status_code == 200
            served += 1
        assert (await anon.get("/ready")).json()["checks"]["database"] == "ok"

        proxy.down()
        assert_unavailable((await timed(client.get("/v1/files")))[0])
        ready = await anon.get("/ready")
        assert ready.status_code == 503
        assert ready.json()["status"] == "not_ready"
        assert ready.json()["checks"]["database"] == "unreachable"
        health = await anon.get("/health")  # liveness: nothing to restart
        assert health.status_code == 200 and health.json()["status"] == "ok"
        outage_calls = [await client.post("/v1/chat/completions", json=CHAT) for _ in range(10)]
        assert {r.status_code for r in outage_calls} <= {200, 503}
        served += sum(r.status_code == 200 for r in outage_calls)
        assert served > 5  # calls were served from the caches
        await asyncio.sleep(1.0)  # the recorder tried (and failed) meanwhile

        proxy.up()
        back = time.monotonic()
        recovered = await until_ok(lambda: client.get("/v1/files"))
        ready_again = await until_ok(lambda: anon.get("/ready"))
        assert recovered - back < 5.0 and ready_again - back < 5.0, (recovered, ready_again)
        await app.state.services.recorder.flush()

    engine = create_engine(pg_url)  # the database itself, not the proxy
    try:
        async with engine.connect() as conn:
            usage = (await conn.execute(text("SELECT count(*) FROM usage_records"))).scalar()
            events = (
                await conn.execute(text("SELECT count(*) FROM chat_completion_events"))
            ).scalar()
    finally:
        await engine.dispose()
    assert (usage, events) == (served, served)


async def until_ok(request: Any, timeout: float = 30.0) -> float:
    """The time (monotonic) of the first 200 of `request()`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = await request()
        if response.status_code == 200:
            return time.monotonic()
        await asyncio.sleep(0.05)
    raise AssertionError("the service did not come back")


def test_a_live_server_through_an_outage(pg_proxy: tuple[FaultProxy, str], tmp_path: Path) -> None:
    """`maestrale serve` as deployed: GET /v1/files through a cut connection and with the
    database stopped is a 503 with Retry-After (it was a 500), /ready says so while /health
    does not, and both recover within 5 s of the database's return, without a restart."""
    proxy, url = pg_proxy
    env = {"MAESTRALE_DATABASE_CONNECT_TIMEOUT": "1", "MAESTRALE_AUTH_CACHE_TTL": "0"}
    proc, base = start_server(tmp_path / "data", "--no-worker", "--database-url", url, env=env)
    headers = {"Authorization": f"Bearer {API_KEY}"}
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
            assert client.get("/v1/files").status_code == 200
            proxy.cut()
            assert_unavailable(client.get("/v1/files"))
            proxy.down()
            for _ in range(3):
                started = time.monotonic()
                assert_unavailable(client.get("/v1/files"))
                assert time.monotonic() - started < BOUND
            ready = client.get("/ready")
            assert ready.status_code == 503 and ready.json()["checks"]["database"] == "unreachable"
            assert client.get("/health").status_code == 200
            proxy.up()
            back = time.monotonic()
            for path in ("/v1/files", "/ready"):
                while client.get(path).status_code != 200:
                    assert time.monotonic() - back < 5.0, path
                    time.sleep(0.05)
    finally:
        stop_server(proc)
