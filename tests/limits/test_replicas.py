"""Two `maestrale serve --workers 2` replicas on one Postgres and one Redis share one budget:
together they allow the configured rate and spend (not twice them), and a key deleted on one
replica is refused by both within a second. Caches are given a 30 s TTL so that only the Redis
channel can explain how fast the other replica sees a change."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support import databases
from tests.support.app_fixtures import ADMIN_KEY, API_KEY, create_owner_key
from tests.support.live import start_server, stop_server

REDIS = os.environ.get("MAESTRALE_TEST_REDIS_URL")
POSTGRES = os.environ.get(databases.POSTGRES_ENV)
pytestmark = pytest.mark.skipif(
    not (REDIS and POSTGRES), reason="needs MAESTRALE_TEST_REDIS_URL and a Postgres URL"
)

RPS = 5
PRICED = """
[[models]]
id = "priced-echo"
engine = "builtin"
capabilities = ["completion_chat"]
price = { input_per_million = 10000.0, output_per_million = 10000.0 }
"""


@dataclass(frozen=True)
class Replicas:
    urls: tuple[str, str]
    database_url: str
    env: dict[str, str]


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    database_url = asyncio.run(databases.create_postgres_database())
    root = tmp_path_factory.mktemp("replicas")
    models = root / "models.toml"
    models.write_text(PRICED)
    env = {
        "MAESTRALE_REDIS_URL": str(REDIS),
        "MAESTRALE_AUTH_CACHE_TTL": "30",
        "MAESTRALE_LIMITS_CACHE_TTL": "30",
        "MAESTRALE_LIMITS": f'{{"requests_per_second": {RPS}}}',
        "MAESTRALE_LOG_LEVEL": "WARNING",
        "MAESTRALE_WORKERS": "2",  # each replica two processes: four share the budget
    }
    procs = []
    try:
        urls = []
        for name in ("a", "b"):  # one after the other: the first creates the default tenant
            data = root / name
            data.mkdir()
            proc, url = start_server(
                data,
                "--no-worker",
                "--database-url",
                database_url,
                "--models",
                str(models),
                env=env,
            )
            procs.append(proc)
            urls.append(url)
        yield Replicas((urls[0], urls[1]), database_url, env)
    finally:
        for proc in procs:
            stop_server(proc)
        asyncio.run(databases.drop_postgres_database(database_url))


def _clients(replicas: Replicas, key: str = API_KEY) -> tuple[httpx.AsyncClient, httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {key}"}
    a, b = (httpx.AsyncClient(base_url=u, headers=headers, timeout=30) for u in replicas.urls)
    return a, b


def _chat(model: str = "maestrale-echo", max_tokens: int = 6) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": "hello world"}],
        "max_tokens": max_tokens,
    }


async def test_requests_per_second_are_shared(replicas: Replicas) -> None:
    a, b = _clients(replicas)
    async with a, b:
        await asyncio.gather(a.get("/v1/models"), b.get("/v1/models"))  # warm connections
        await asyncio.sleep(1.1)
        for _ in range(2):  # the window slides: a second burst gets the same budget
            started = time.monotonic()
            responses = await asyncio.gather(
                *(c.post("/v1/chat/completions", json=_chat()) for c in (a, b) * 12)
            )
            elapsed = time.monotonic() - started
            admitted = sum(r.status_code == 200 for r in responses)
            refused = [r for r in responses if r.status_code == 429]
            assert admitted + len(refused) == 24
            assert all(r.headers["retry-after"] == "1" for r in refused)
            if elapsed < 1.0:
                assert abs(admitted - RPS) <= 1, admitted  # per-replica counters would give 10
            else:  # a slow machine: the burst spanned more than one window
                assert admitted <= RPS * (int(elapsed) + 1) + 1
            await asyncio.sleep(1.1)


def _limits_cli(replicas: Replicas, *args: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "maestrale",
            "limits",
            *args,
            "--database-url",
            replicas.database_url,
        ],
        env={**os.environ, **replicas.env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr


async def test_tokens_per_minute_are_shared(replicas: Replicas) -> None:
    """Changed with the CLI: both replicas see it at once through Redis (cache TTL is 30 s)."""
    limit = 200
    _limits_cli(replicas, "set", "--rps", "unlimited")
    _limits_cli(replicas, "set-model", "maestrale-echo", "--tpm", str(limit))
    a, b = _clients(replicas)
    used = 0
    estimate = len("hello world") // 4 + 6  # what each call reserves
    async with a, b:
        for _ in range(20):
            responses = await asyncio.gather(
                *(c.post("/v1/chat/completions", json=_chat()) for c in (a, b) * 4)
            )
            ok = [r for r in responses if r.status_code == 200]
            used += sum(r.json()["usage"]["total_tokens"] for r in ok)
            if not ok:
                break
        assert all(r.json()["code"] == "token_limit_exceeded" for r in responses)
    assert limit - estimate < used <= limit  # within one request of the limit, never above
    _limits_cli(replicas, "unset-model", "maestrale-echo")


async def test_spend_limit_is_shared(replicas: Replicas) -> None:
    limit = 1.0
    price = 10000 / 1_000_000
    admin = httpx.AsyncClient(base_url=replicas.urls[0], headers={"x-api-key": ADMIN_KEY})
    async with admin:
        resp = await admin.post("/v1/admin/spend-limit", json={"amount": limit})
        assert resp.status_code == 200
    a, b = _clients(replicas)
    spent = 0.0
    worst = (len("hello world") // 4 + 6) * price
    async with a, b:
        for _ in range(20):
            responses = await asyncio.gather(
                *(c.post("/v1/chat/completions", json=_chat("priced-echo")) for c in (a, b) * 4)
            )
            ok = [r for r in responses if r.status_code == 200]
            spent += sum(r.json()["usage"]["total_tokens"] for r in ok) * price
            if not ok:
                break
        assert all(r.json()["code"] == "spend_limit_exceeded" for r in responses)
        # free calls still pass on both replicas
        free = await asyncio.gather(
            a.post("/v1/chat/completions", json=_chat()),
            b.post("/v1/chat/completions", json=_chat()),
        )
        assert [r.status_code for r in free] == [200, 200]
    assert limit - worst < spent <= limit + 1e-9


async def test_deleted_key_is_refused_by_both_replicas_within_a_second(
    replicas: Replicas,
) -> None:
    admin = httpx.AsyncClient(base_url=replicas.urls[0], headers={"x-api-key": ADMIN_KEY})
    async with admin:
        created = await create_owner_key(admin)
        a, b = _clients(replicas, created["key"])
        async with a, b:
            # the new key works at once on both replicas (and is now cached by both)
            assert (await a.get("/v1/models")).status_code == 200
            assert (await b.get("/v1/models")).status_code == 200
            deleted_at = time.monotonic()
            assert (
                await admin.delete(f"/v1/admin/api-keys/{created['key_id']}")
            ).status_code == 200
            waited = await _until_refused(b, deleted_at)
            assert (await a.get("/v1/models")).status_code == 401
    assert waited < 1.0, waited


async def test_archived_workspace_keys_are_refused_by_both_replicas(replicas: Replicas) -> None:
    admin = httpx.AsyncClient(base_url=replicas.urls[1], headers={"x-api-key": ADMIN_KEY})
    async with admin:
        users = (await admin.get("/v1/admin/users")).json()["members"]
        owner = next(u["uuid"] for u in users if u["email"] == "owner@localhost")
        ws = (
            await admin.post(
                "/v1/admin/workspaces", json={"name": "short-lived", "admin_user_id": owner}
            )
        ).json()["uuid"]
        created = (
            await admin.post("/v1/admin/api-keys", json={"user_id": owner, "workspace_uuid": ws})
        ).json()
        a, b = _clients(replicas, created["key"])
        async with a, b:
            assert (await a.get("/v1/models")).status_code == 200
            assert (await b.get("/v1/models")).status_code == 200
            archived_at = time.monotonic()
            assert (await admin.delete(f"/v1/admin/workspaces/{ws}")).status_code == 204
            waited = await _until_refused(a, archived_at)
            assert (await b.get("/v1/models")).status_code == 401
    assert waited < 1.0, waited


async def _until_refused(client: httpx.AsyncClient, since: float) -> float:
    while time.monotonic() - since < 5:
        if (await client.get("/v1/models")).status_code == 401:
            return time.monotonic() - since
        await asyncio.sleep(0.01)
    return float("inf")
