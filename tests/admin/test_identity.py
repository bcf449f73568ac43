"""/v1/users/me, its organizations and workspaces, and /v1/whoami: who a key belongs to."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from mistralai.client.models import UserIdentity

from maestrale.core.auth.keys import hash_key
from maestrale.core.auth.repository import KeyRepository
from tests.admin.conftest import create_workspace, default_workspace_id, owner_id
from tests.support.app_fixtures import ADMIN_KEY, API_KEY, create_tenant, make_client

pytestmark = pytest.mark.both_databases("maestrale.admin.identity.repository")


async def test_a_users_key(
    app: FastAPI, client: httpx.AsyncClient, admin: httpx.AsyncClient
) -> None:
    owner, ws = await owner_id(admin), await default_workspace_id(admin)
    second = await create_workspace(admin, "Second", owner)
    org = (await client.get("/v1/users/me/organizations")).json()["organizations"]
    assert len(org) == 1 and set(org[0]) == {"id", "name"}

    me = (await client.get("/v1/users/me")).json()
    async with app.state.services.db.transaction() as work:
        key = await KeyRepository(work.session).principal_for_hash(hash_key(API_KEY))
    assert key is not None
    assert me == {
        "id": owner,
        "email": "owner@localhost",
        "first_name": None,
        "last_name": None,
        "workspace": {"id": ws, "name": "Default workspace"},
        "organization": org[0],
        "api_key": {"id": key.key_id, "name": "bootstrap"},
    }
    assert UserIdentity.model_validate(me).api_key is not None  # the venv's 2.8.0 model

    spaces = (await client.get("/v1/users/me/workspaces")).json()["workspaces"]
    assert spaces == [
        {"id": ws, "name": "Default workspace", "organization_id": org[0]["id"]},
        {"id": second, "name": "Second", "organization_id": org[0]["id"]},
    ]
    paged = await client.get("/v1/users/me/workspaces", params={"offset": 1, "limit": 1})
    assert [w["id"] for w in paged.json()["workspaces"]] == [second]
    other_org = await client.get("/v1/users/me/workspaces", params={"organization_id": "x"})
    assert other_org.json() == {"workspaces": []}
    assert (await admin.delete(f"/v1/admin/workspaces/{second}")).status_code == 204
    spaces = (await client.get("/v1/users/me/workspaces")).json()["workspaces"]
    assert [w["id"] for w in spaces] == [ws]

    who = (await client.get("/v1/whoami")).json()
    assert who["principal"] == {
        "principal_type": "user",
        "id": owner,
        "email": "owner@localhost",
        "first_name": None,
        "last_name": None,
    }
    assert who["workspace"] == me["workspace"]
    assert who["organization"] == {**org[0], "org_tier": None, "internal": False, "kind": "S"}

    for params in ({"limit": 0}, {"offset": -1}, {"limit": 1001}):
        assert (await client.get("/v1/users/me/organizations", params=params)).status_code == 422


async def test_keys_of_no_user(app: FastAPI) -> None:
    """A workspace key names no principal (403) but lists its workspace; an admin key is no
    standard key (401), in either header."""
    other = await create_tenant(app.state.services.db)
    async with make_client(app, other.key) as c:
        for path in ("/v1/users/me", "/v1/whoami"):
            resp = await c.get(path)
            assert resp.status_code == 403 and resp.json()["code"] == "no_principal"
        spaces = (await c.get("/v1/users/me/workspaces")).json()["workspaces"]
        assert [w["id"] for w in spaces] == [other.tenant.workspace_id]
        orgs = (await c.get("/v1/users/me/organizations")).json()["organizations"]
        assert [o["id"] for o in orgs] == [other.tenant.organization_id]
    async with make_client(app, None) as c:
        # 2.x sends the key in `x-api-key` here: a standard key is read there too, never an
        # admin key.
        assert (await c.get("/v1/whoami", headers={"x-api-key": other.key})).status_code == 403
        for headers in ({"x-api-key": ADMIN_KEY}, {"authorization": f"Bearer {ADMIN_KEY}"}):
            resp = await c.get("/v1/users/me", headers=headers)
            assert resp.status_code == 401 and resp.json()["code"] == "admin_key_not_allowed"
        assert (await c.get("/v1/users/me", headers={"x-api-key": "nope"})).status_code == 401
