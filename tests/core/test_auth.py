"""Keys: hashed at rest, refused when missing, wrong, expired, revoked or of the wrong kind."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update

from maestrale.core.auth.keys import hash_key
from maestrale.core.auth.principal import Principal
from maestrale.core.auth.repository import KeyRepository
from maestrale.core.auth.tables import ApiKey, Workspace
from maestrale.core.clock import utcnow
from tests.support.app_fixtures import ADMIN_KEY, API_KEY, TenantKey, make_client

pytestmark = pytest.mark.both_databases("maestrale.core.auth.repository")


async def test_keys_are_stored_hashed(app: FastAPI) -> None:
    async with app.state.services.db.transaction() as work:
        rows = (await work.session.execute(select(ApiKey))).scalars().all()
    assert {r.key_hash for r in rows} == {hash_key(API_KEY), hash_key(ADMIN_KEY)}
    for row in rows:
        assert API_KEY not in (row.hidden_key, row.name)
        assert len(row.hidden_key) < 16


async def test_missing_and_wrong_keys_are_401_json(app: FastAPI) -> None:
    for headers in (
        {},
        {"Authorization": "Bearer nope"},
        {"Authorization": "Basic abc"},
        {"Authorization": "Bearer "},
        {"Authorization": API_KEY},
    ):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test", headers=headers
        ) as c:
            resp = await c.get("/v1/models")
        assert resp.status_code == 401, headers
        body = resp.json()
        assert body["object"] == "error"
        assert body["type"] == "authentication_error"
        assert body["message"]


async def test_admin_key_does_not_open_standard_routes(app: FastAPI) -> None:
    async with make_client(app, ADMIN_KEY) as c:
        resp = await c.get("/v1/models")
    assert resp.status_code == 401
    assert resp.json()["code"] == "admin_key_not_allowed"


async def test_revoked_key_is_refused_at_once(app: FastAPI, other: TenantKey) -> None:
    async with make_client(app, other.key) as c:
        assert (await c.get("/v1/models")).status_code == 200  # now cached
        async with app.state.services.db.transaction() as work:
            key_id = (
                await work.session.execute(
                    select(ApiKey.id).where(ApiKey.key_hash == hash_key(other.key))
                )
            ).scalar_one()
            assert await KeyRepository(work.session).revoke(key_id)
        app.state.services.key_cache.invalidate_key(key_id)
        assert (await c.get("/v1/models")).status_code == 401


async def test_revocation_elsewhere_is_seen_within_the_cache_ttl(
    app: FastAPI, other: TenantKey
) -> None:
    app.state.services.key_cache.ttl = 0.0  # what another replica sees once its entry is stale
    async with make_client(app, other.key) as c:
        assert (await c.get("/v1/models")).status_code == 200
        async with app.state.services.db.transaction() as work:
            await work.session.execute(
                update(ApiKey)
                .where(ApiKey.key_hash == hash_key(other.key))
                .values(revoked_at=utcnow())
            )
        assert (await c.get("/v1/models")).status_code == 401


async def test_expired_key_is_refused_even_when_cached(app: FastAPI, other: TenantKey) -> None:
    # Long enough for the first request to pass on a loaded machine; the second waits it out.
    expires = utcnow() + timedelta(seconds=2)
    async with app.state.services.db.transaction() as work:
        await work.session.execute(
            update(ApiKey).where(ApiKey.key_hash == hash_key(other.key)).values(expires_at=expires)
        )
    async with make_client(app, other.key) as c:
        assert (await c.get("/v1/models")).status_code == 200
        import asyncio

        await asyncio.sleep(max(0.0, (expires - utcnow()).total_seconds()) + 0.1)
        assert (await c.get("/v1/models")).status_code == 401


async def test_key_of_archived_workspace_is_refused(app: FastAPI, other: TenantKey) -> None:
    async with app.state.services.db.transaction() as work:
        await work.session.execute(
            update(Workspace)
            .where(Workspace.id == other.tenant.workspace_id)
            .values(archived_at=utcnow())
        )
    async with make_client(app, other.key) as c:
        assert (await c.get("/v1/models")).status_code == 401


async def test_last_used_is_recorded_off_the_request_path(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    from maestrale.app import _flush_key_usage

    assert (await client.get("/v1/models")).status_code == 200
    async with app.state.services.db.transaction() as work:
        row = (
            await work.session.execute(select(ApiKey).where(ApiKey.key_hash == hash_key(API_KEY)))
        ).scalar_one()
        assert row.last_used_at is None
    await _flush_key_usage(app.state.services, asyncio.Lock())
    async with app.state.services.db.transaction() as work:
        row = (
            await work.session.execute(select(ApiKey).where(ApiKey.key_hash == hash_key(API_KEY)))
        ).scalar_one()
        assert row.last_used_at is not None


async def test_concurrent_requests_of_an_uncached_key_read_it_once(
    app: FastAPI, other: TenantKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hot path: a burst of requests with a key not in memory (start-up, or its entry gone
    stale) waits for one read of the key, not one each (which took the pool's connections)."""
    reads = 0
    read = KeyRepository.principal_for_hash

    async def counted(self: KeyRepository, key_hash: str) -> Principal | None:
        nonlocal reads
        reads += 1
        return await read(self, key_hash)

    monkeypatch.setattr(KeyRepository, "principal_for_hash", counted)
    async with make_client(app, other.key) as c:
        responses = await asyncio.gather(*(c.get("/v1/models") for _ in range(10)))
    assert [r.status_code for r in responses] == [200] * 10
    assert reads == 1
