"""/v1/admin/api-keys: created keys work at once, lists are masked, deleted keys are refused."""

from __future__ import annotations

from datetime import date, timedelta

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.core.auth.keys import hash_key
from maestrale.core.auth.tables import ApiKey
from tests.admin.conftest import (
    admin_client,
    create_key,
    create_user,
    create_workspace,
    default_workspace_id,
    foreign_admin_key,
    owner_id,
)
from tests.support.app_fixtures import make_client

pytestmark = pytest.mark.both_databases("maestrale.admin.keys.repository")


async def test_created_key_works_at_once_and_is_shown_once(
    app: FastAPI, admin: httpx.AsyncClient
) -> None:
    owner, ws = await owner_id(admin), await default_workspace_id(admin)
    expiry = (date.today() + timedelta(days=30)).isoformat()
    resp = await admin.post(
        "/v1/admin/api-keys",
        json={"user_id": owner, "workspace_uuid": ws, "name": "ci", "expiration": expiry},
    )
    assert resp.status_code == 200
    body = resp.json()
    assert set(body) == {
        "actions",
        "created_at",
        "expiration_date",
        "hidden_key",
        "key",
        "key_id",
        "name",
    }
    assert body["name"] == "ci"
    assert body["expiration_date"] == expiry
    assert body["key"].startswith("msk_")
    assert body["key"] not in body["hidden_key"]
    assert body["actions"] == {"delete": {"status": "available"}}  # opt-in: no rotate
    async with make_client(app, body["key"]) as c:
        assert (await c.get("/v1/models")).status_code == 200
    async with app.state.services.db.transaction() as work:
        row = (
            await work.session.execute(select(ApiKey).where(ApiKey.id == body["key_id"]))
        ).scalar_one()
    assert row.key_hash == hash_key(body["key"])
    assert body["key"] not in (row.hidden_key, row.name)

    listed = (await admin.get("/v1/admin/api-keys")).json()["keys"]
    mine = next(k for k in listed if k["key_id"] == body["key_id"])
    assert mine["key"] is None
    assert mine["hidden_key"] == body["hidden_key"]
    assert mine["workspace_id"] == ws
    assert mine["workspace_name"] == "Default workspace"
    assert mine["product"] == "API"
    assert mine["can_delete"] is True
    assert mine["expiration_date"] == expiry
    assert {
        "key_id",
        "name",
        "key",
        "hidden_key",
        "created_at",
        "created_by",
        "expiration_date",
        "last_used",
        "can_delete",
        "actions",
        "product",
        "workspace_id",
        "workspace_name",
    } <= set(mine)
    assert all(k["hidden_key"] for k in listed)  # admin keys are not listed: standard only


async def test_list_limit_and_offset(admin: httpx.AsyncClient) -> None:
    owner, ws = await owner_id(admin), await default_workspace_id(admin)
    for _ in range(3):
        await create_key(admin, owner, ws)
    everything = (await admin.get("/v1/admin/api-keys")).json()["keys"]
    assert len(everything) == 4  # bootstrap key + 3
    first_two = (await admin.get("/v1/admin/api-keys", params={"limit": 2})).json()["keys"]
    rest = (await admin.get("/v1/admin/api-keys", params={"offset": 2})).json()["keys"]
    assert [k["key_id"] for k in first_two + rest] == [k["key_id"] for k in everything]
    assert (await admin.get("/v1/admin/api-keys", params={"limit": 0})).status_code == 422


async def test_deleted_key_is_refused_at_once(app: FastAPI, admin: httpx.AsyncClient) -> None:
    created = await create_key(admin, await owner_id(admin), await default_workspace_id(admin))
    async with make_client(app, created["key"]) as c:
        assert (await c.get("/v1/models")).status_code == 200  # now cached
        resp = await admin.delete(f"/v1/admin/api-keys/{created['key_id']}")
        assert resp.status_code == 200
        assert resp.json() == {"detail": "API key deleted successfully"}
        assert (await c.get("/v1/models")).status_code == 401
    keys = (await admin.get("/v1/admin/api-keys")).json()["keys"]
    assert created["key_id"] not in {k["key_id"] for k in keys}
    again = await admin.delete(f"/v1/admin/api-keys/{created['key_id']}")
    assert again.status_code == 404


async def test_create_errors(app: FastAPI, admin: httpx.AsyncClient) -> None:
    owner, ws = await owner_id(admin), await default_workspace_id(admin)
    stranger = await create_user(admin, "stranger@example.com")
    cases = [
        ({"workspace_uuid": ws}, 422, None),
        ({"user_id": owner}, 422, None),
        ({"user_id": owner, "workspace_uuid": "nope"}, 404, "workspace_not_found"),
        ({"user_id": "nope", "workspace_uuid": ws}, 404, "user_not_found"),
        ({"user_id": stranger, "workspace_uuid": ws}, 400, "user_not_in_workspace"),
        ({"user_id": owner, "workspace_uuid": ws, "expiration": "2001-01-01"}, 400, None),
        ({"user_id": owner, "workspace_uuid": ws, "expiration": "soon"}, 422, None),
    ]
    for body, status, code in cases:
        resp = await admin.post("/v1/admin/api-keys", json=body)
        assert resp.status_code == status, (body, resp.text)
        if code:
            assert resp.json()["code"] == code
    archived = await create_workspace(admin, "old", owner)
    assert (await admin.delete(f"/v1/admin/workspaces/{archived}")).status_code == 204
    resp = await admin.post(
        "/v1/admin/api-keys", json={"user_id": owner, "workspace_uuid": archived}
    )
    assert resp.status_code == 409


async def test_another_organization_sees_nothing(app: FastAPI, admin: httpx.AsyncClient) -> None:
    created = await create_key(admin, await owner_id(admin), await default_workspace_id(admin))
    key, _, foreign_ws = await foreign_admin_key(app)
    async with admin_client(app, key) as foreign:
        listed = (await foreign.get("/v1/admin/api-keys")).json()["keys"]
        assert listed == []
        assert (await foreign.delete(f"/v1/admin/api-keys/{created['key_id']}")).status_code == 404
        owner = await owner_id(admin)
        resp = await foreign.post(
            "/v1/admin/api-keys", json={"user_id": owner, "workspace_uuid": foreign_ws}
        )
        assert resp.status_code == 404  # our owner is not their user
    async with make_client(app, created["key"]) as c:
        assert (await c.get("/v1/models")).status_code == 200
