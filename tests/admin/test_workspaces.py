"""/v1/admin/workspaces: list, create, update, archive, and members."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from maestrale.admin import roles as R
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

pytestmark = pytest.mark.both_databases("maestrale.admin.workspaces.repository")

WS_ADMIN = R.WORKSPACE.uuid_of("workspace_admin")
WS_USER = R.WORKSPACE.uuid_of("user")
WS_DEV = R.WORKSPACE.uuid_of("dev")


async def _member_roles(admin: httpx.AsyncClient, user: str, ws: str) -> list[str] | None:
    member = (await admin.get(f"/v1/admin/users/{user}")).json()
    for info in member["workspaces"]:
        if info["uuid"] == ws:
            return list(info["raw_roles"])
    return None


async def test_create_and_list(admin: httpx.AsyncClient) -> None:
    owner = await owner_id(admin)
    await create_user(admin, "a@example.com")
    resp = await admin.post(
        "/v1/admin/workspaces",
        json={
            "name": "Product",
            "admin_user_id": owner,
            "description": "d",
            "icon": "★",
            "add_all_org_members": True,
        },
    )
    assert resp.status_code == 200
    created = resp.json()
    assert created["name"] == "Product" and created["description"] == "d"
    assert created["icon"] == "★" and created["is_default"] is False
    assert created["members_count"] == 2
    assert created["raw_roles"] == [WS_ADMIN] and created["raw_role"] == WS_ADMIN
    assert await _member_roles(admin, owner, created["uuid"]) == [WS_ADMIN]
    for i in range(3):
        await create_workspace(admin, f"w{i}", owner)
    listing = (await admin.get("/v1/admin/workspaces", params={"page_size": 2})).json()
    assert listing["object"] == "list"
    assert (listing["page"], listing["page_size"], listing["total"]) == (1, 2, 5)
    assert len(listing["items"]) == 2
    item = listing["items"][0]
    assert set(item) >= {"description", "icon", "is_default", "members_count", "name", "uuid"}
    page3 = (await admin.get("/v1/admin/workspaces", params={"page": 3, "page_size": 2})).json()
    assert len(page3["items"]) == 1
    found = (await admin.get("/v1/admin/workspaces", params={"search": "prod"})).json()
    assert [w["name"] for w in found["items"]] == ["Product"] and found["total"] == 1


async def test_create_errors(admin: httpx.AsyncClient) -> None:
    owner = await owner_id(admin)
    cases = [
        ({"admin_user_id": owner}, 422),
        ({"name": "x"}, 422),
        ({"name": "", "admin_user_id": owner}, 422),
        ({"name": "x" * 256, "admin_user_id": owner}, 422),
        ({"name": "x", "admin_user_id": owner, "icon": "too long"}, 422),
        ({"name": "x", "admin_user_id": "nope"}, 404),
    ]
    for body, status in cases:
        assert (await admin.post("/v1/admin/workspaces", json=body)).status_code == status, body


async def test_update(admin: httpx.AsyncClient) -> None:
    ws = await create_workspace(admin, "before", await owner_id(admin))
    resp = await admin.patch(f"/v1/admin/workspaces/{ws}", json={"name": "after", "icon": "x"})
    assert resp.status_code == 200
    assert resp.json()["name"] == "after" and resp.json()["icon"] == "x"
    assert resp.json()["description"] is None
    assert (await admin.patch(f"/v1/admin/workspaces/{ws}", json={"name": ""})).status_code == 422
    assert (await admin.patch("/v1/admin/workspaces/nope", json={})).status_code == 404


async def test_archive_refuses_keys_at_once(app: FastAPI, admin: httpx.AsyncClient) -> None:
    owner = await owner_id(admin)
    ws = await create_workspace(admin, "soon archived", owner)
    key = await create_key(admin, owner, ws)
    async with make_client(app, key["key"]) as c:
        assert (await c.get("/v1/models")).status_code == 200  # cached now
        assert (await admin.delete(f"/v1/admin/workspaces/{ws}")).status_code == 204
        assert (await c.get("/v1/models")).status_code == 401
    listing = (await admin.get("/v1/admin/workspaces")).json()
    assert ws not in {w["uuid"] for w in listing["items"]}
    archived = (await admin.get("/v1/admin/workspaces", params={"is_archived": True})).json()
    assert ws in {w["uuid"] for w in archived["items"]}
    assert (await admin.delete(f"/v1/admin/workspaces/{ws}")).status_code == 204  # idempotent
    add = await admin.post(f"/v1/admin/workspaces/{ws}/add-users", json={"members": []})
    assert add.status_code == 409
    default = await default_workspace_id(admin)
    refused = await admin.delete(f"/v1/admin/workspaces/{default}")
    assert refused.status_code == 409 and refused.json()["code"] == "default_workspace"


async def test_members(admin: httpx.AsyncClient) -> None:
    owner = await owner_id(admin)
    ws = await create_workspace(admin, "team", owner)
    a = await create_user(admin, "a@example.com")
    b = await create_user(admin, "b@example.com")
    resp = await admin.post(
        f"/v1/admin/workspaces/{ws}/add-users",
        json={"members": [{"user_uuid": a}, {"user_uuid": owner, "role_names": ["dev"]}]},
    )
    assert resp.json() == {"added_members_count": 1}  # the owner was a member already
    assert await _member_roles(admin, a, ws) == [WS_USER]
    assert await _member_roles(admin, owner, ws) == [WS_ADMIN]  # left as it was
    resp = await admin.patch(
        f"/v1/admin/workspaces/{ws}/users",
        json={"members": [{"user_uuid": a, "roles": [WS_DEV]}, {"user_uuid": b, "role": "A"}]},
    )
    assert resp.json() == {"added_members_count": 1, "updated_members_count": 1}
    assert await _member_roles(admin, a, ws) == [WS_DEV]
    assert await _member_roles(admin, b, ws) == [WS_ADMIN]
    again = await admin.patch(
        f"/v1/admin/workspaces/{ws}/users", json={"members": [{"user_uuid": a, "roles": [WS_DEV]}]}
    )
    assert again.json() == {"added_members_count": 0, "updated_members_count": 0}
    listing = (await admin.get("/v1/admin/workspaces", params={"search": "team"})).json()
    assert listing["items"][0]["members_count"] == 3
    resp = await admin.request(
        "DELETE",
        f"/v1/admin/workspaces/{ws}/remove-users",
        json={"members": [{"user_uuid": a}, {"user_uuid": "not-a-member"}]},
    )
    assert resp.json() == {"deleted_members_count": 1}
    assert await _member_roles(admin, a, ws) is None


async def test_member_errors(admin: httpx.AsyncClient) -> None:
    ws = await create_workspace(admin, "team", await owner_id(admin))
    a = await create_user(admin, "a@example.com")
    url = f"/v1/admin/workspaces/{ws}"
    exclusive = [
        {"user_uuid": a, "role": "A", "role_name": "user"},
        {"user_uuid": a, "role_names": ["user"], "roles": [WS_USER]},
    ]
    for member in exclusive:
        for method, path in (("POST", "/add-users"), ("PATCH", "/users")):
            resp = await admin.request(method, url + path, json={"members": [member]})
            assert resp.status_code == 422, (method, member)
    assert (
        await admin.post(url + "/add-users", json={"members": [{"user_uuid": "x"}]})
    ).status_code == 404
    assert (
        await admin.post(url + "/add-users", json={"members": [{"role": "A"}]})
    ).status_code == 422
    bad_role = {"members": [{"user_uuid": a, "role_names": ["emperor"]}]}
    assert (await admin.post(url + "/add-users", json=bad_role)).status_code == 422
    assert (await admin.request("DELETE", url + "/remove-users", json={})).status_code == 422
    missing = await admin.post("/v1/admin/workspaces/nope/add-users", json={"members": []})
    assert missing.status_code == 404


async def test_removing_a_member_revokes_their_keys_there(
    app: FastAPI, admin: httpx.AsyncClient
) -> None:
    owner = await owner_id(admin)
    ws = await create_workspace(admin, "team", owner)
    a = await create_user(admin, "a@example.com")
    await admin.post(f"/v1/admin/workspaces/{ws}/add-users", json={"members": [{"user_uuid": a}]})
    key = await create_key(admin, a, ws)
    async with make_client(app, key["key"]) as c:
        assert (await c.get("/v1/models")).status_code == 200
        await admin.request(
            "DELETE",
            f"/v1/admin/workspaces/{ws}/remove-users",
            json={"members": [{"user_uuid": a}]},
        )
        assert (await c.get("/v1/models")).status_code == 401


async def test_workspaces_of_another_organization_are_not_found(
    app: FastAPI, admin: httpx.AsyncClient
) -> None:
    ws = await create_workspace(admin, "mine", await owner_id(admin))
    key, _, foreign_ws = await foreign_admin_key(app)
    async with admin_client(app, key) as foreign:
        listing = (await foreign.get("/v1/admin/workspaces")).json()
        assert [w["uuid"] for w in listing["items"]] == [foreign_ws]
        assert (
            await foreign.patch(f"/v1/admin/workspaces/{ws}", json={"name": "x"})
        ).status_code == 404
        assert (await foreign.delete(f"/v1/admin/workspaces/{ws}")).status_code == 404
        for method, path in (("POST", "add-users"), ("PATCH", "users"), ("DELETE", "remove-users")):
            resp = await foreign.request(
                method, f"/v1/admin/workspaces/{ws}/{path}", json={"members": []}
            )
            assert resp.status_code == 404, path
    assert (await admin.get("/v1/admin/workspaces", params={"search": "mine"})).json()["total"] == 1
