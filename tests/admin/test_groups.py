"""/v1/admin/user-groups: groups, members, workspace assignments and organization role."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from maestrale.admin import roles as R
from tests.admin.conftest import (
    admin_client,
    create_user,
    create_workspace,
    foreign_admin_key,
    owner_id,
)

pytestmark = pytest.mark.both_databases("maestrale.admin.groups.repository")

WS_USER = R.WORKSPACE.uuid_of("user")
WS_DEV = R.WORKSPACE.uuid_of("dev")
WS_ADMIN = R.WORKSPACE.uuid_of("workspace_admin")
BILLING = R.ORG.uuid_of("billing_manager")


async def _roles_in(admin: httpx.AsyncClient, user: str, ws: str) -> list[str] | None:
    for info in (await admin.get(f"/v1/admin/users/{user}")).json()["workspaces"]:
        if info["uuid"] == ws:
            return list(info["raw_roles"])
    return None


async def _group(admin: httpx.AsyncClient, name: str = "Interns") -> str:
    resp = await admin.post("/v1/admin/user-groups", json={"name": name, "description": "d"})
    assert resp.status_code == 200, resp.text
    return str(resp.json()["uuid"])


async def test_group_crud(admin: httpx.AsyncClient) -> None:
    resp = await admin.post("/v1/admin/user-groups", json={"name": "Interns"})
    assert resp.status_code == 200
    group = resp.json()
    assert group["name"] == "Interns" and group["description"] is None
    assert group["target_type"] == "W" and group["parent_group_ids"] == []
    assert group["externally_managed"] is False and group["organization_role"] is None
    child = await admin.post(
        "/v1/admin/user-groups",
        json={"name": "Child", "parent_group_ids": [group["uuid"]], "target_type": "O"},
    )
    assert child.json()["parent_group_ids"] == [group["uuid"]]
    assert (await admin.post("/v1/admin/user-groups", json={"name": "Interns"})).status_code == 409
    assert (await admin.post("/v1/admin/user-groups", json={})).status_code == 422
    bad_parent = await admin.post(
        "/v1/admin/user-groups", json={"name": "x", "parent_group_ids": ["nope"]}
    )
    assert bad_parent.status_code == 404
    got = await admin.get(f"/v1/admin/user-groups/{group['uuid']}")
    assert got.json() == group
    patched = await admin.patch(
        f"/v1/admin/user-groups/{group['uuid']}", json={"description": "Summer interns"}
    )
    assert patched.json()["description"] == "Summer interns" and patched.json()["name"] == "Interns"
    clash = await admin.patch(f"/v1/admin/user-groups/{group['uuid']}", json={"name": "Child"})
    assert clash.status_code == 409
    listing = (await admin.get("/v1/admin/user-groups", params={"page_size": 1})).json()
    assert (listing["page"], listing["page_size"], listing["total"]) == (1, 1, 2)
    assert len(listing["items"]) == 1
    assert (await admin.get("/v1/admin/user-groups", params={"search": "chi"})).json()["total"] == 1
    assert (await admin.delete(f"/v1/admin/user-groups/{group['uuid']}")).status_code == 204
    assert (await admin.get(f"/v1/admin/user-groups/{group['uuid']}")).status_code == 404
    assert (await admin.delete(f"/v1/admin/user-groups/{group['uuid']}")).status_code == 404
    assert (await admin.patch("/v1/admin/user-groups/nope", json={})).status_code == 404


async def test_members(admin: httpx.AsyncClient) -> None:
    group = await _group(admin)
    a = await create_user(admin, "a@example.com")
    b = await create_user(admin, "b@example.com")
    url = f"/v1/admin/user-groups/{group}/members"
    assert (await admin.post(url, json={"user_uuids": [a, b, a]})).status_code == 204
    assert (await admin.post(url, json={"user_uuids": [a]})).status_code == 204  # idempotent
    page = (await admin.get(url, params={"page_size": 1})).json()
    assert (page["page"], page["page_size"], page["total"]) == (1, 1, 2)
    assert page["members"] == [{"email": "a@example.com", "name": "First Last", "user_uuid": a}]
    assert (await admin.request("DELETE", url, json={"user_uuids": [a]})).status_code == 204
    remaining = (await admin.get(url)).json()["members"]
    assert [m["user_uuid"] for m in remaining] == [b]
    assert (await admin.post(url, json={"user_uuids": ["nope"]})).status_code == 404
    assert (await admin.post(url, json={})).status_code == 422
    assert (await admin.get("/v1/admin/user-groups/nope/members")).status_code == 404


async def test_provision_workspace(admin: httpx.AsyncClient) -> None:
    owner = await owner_id(admin)
    ws = await create_workspace(admin, "team", owner)
    group = await _group(admin)
    a = await create_user(admin, "a@example.com")
    await admin.post(f"/v1/admin/user-groups/{group}/members", json={"user_uuids": [a, owner]})
    body = {"user_group_uuid": group, "workspace_uuid": ws, "workspace_role_name": "dev"}
    assert (
        await admin.post("/v1/admin/user-groups/provision-workspace", json=body)
    ).status_code == 204
    assert await _roles_in(admin, a, ws) == [WS_DEV]
    assert await _roles_in(admin, owner, ws) == [WS_ADMIN, WS_DEV]  # provisioning only adds
    # the assignment stays: a member who joins later is provisioned too
    b = await create_user(admin, "b@example.com")
    await admin.post(f"/v1/admin/user-groups/{group}/members", json={"user_uuids": [b]})
    assert await _roles_in(admin, b, ws) == [WS_DEV]
    both = {**body, "workspace_role": WS_USER}
    resp = await admin.post("/v1/admin/user-groups/provision-workspace", json=both)
    assert resp.status_code == 422
    assert "mutually exclusive" in resp.json()["detail"][0]["msg"]
    for wrong, status in (
        ({**body, "user_group_uuid": "nope"}, 404),
        ({**body, "workspace_uuid": "nope"}, 404),
        ({"user_group_uuid": group}, 422),
        ({**body, "workspace_role_name": "king"}, 422),
    ):
        resp = await admin.post("/v1/admin/user-groups/provision-workspace", json=wrong)
        assert resp.status_code == status, wrong


async def test_workspace_assignments(admin: httpx.AsyncClient) -> None:
    owner = await owner_id(admin)
    ws = await create_workspace(admin, "team", owner)
    group = await _group(admin)
    a = await create_user(admin, "a@example.com")
    await admin.post(f"/v1/admin/user-groups/{group}/members", json={"user_uuids": [a]})
    url = f"/v1/admin/user-groups/{group}/workspaces"
    resp = await admin.post(url, json={"workspace_uuid": ws, "role_names": ["user"]})
    assert resp.status_code == 204
    assert await _roles_in(admin, a, ws) == [WS_USER]
    assert (await admin.post(url, json={"workspace_uuid": ws})).status_code == 409
    listing = (await admin.get(url)).json()
    assert listing["total"] == 1 and (listing["page"], listing["page_size"]) == (1, 100)
    item = listing["items"][0]
    assert item["workspace_uuid"] == ws and item["workspace_name"] == "team"
    assert item["roles"] == [{"name": "user", "uuid": WS_USER}]
    assert item["role_name"] == "user" and item["role_uuid"] == WS_USER and item["created"]
    patched = await admin.patch(f"{url}/{ws}", json={"roles": [WS_DEV]})
    assert patched.status_code == 204
    assert (await admin.get(url)).json()["items"][0]["roles"] == [{"name": "dev", "uuid": WS_DEV}]
    assert await _roles_in(admin, a, ws) == [WS_USER, WS_DEV]
    exclusive = await admin.patch(f"{url}/{ws}", json={"roles": [WS_DEV], "role_names": ["dev"]})
    assert exclusive.status_code == 422
    exclusive = await admin.post(
        url, json={"workspace_uuid": ws, "roles": [WS_DEV], "role_names": ["dev"]}
    )
    assert exclusive.status_code == 422
    assert (await admin.delete(f"{url}/{ws}")).status_code == 204
    assert (await admin.get(url)).json()["items"] == []
    assert await _roles_in(admin, a, ws) == [WS_USER, WS_DEV]  # memberships stay
    assert (await admin.delete(f"{url}/{ws}")).status_code == 404
    assert (await admin.patch(f"{url}/{ws}", json={"roles": [WS_DEV]})).status_code == 404
    assert (await admin.post(url, json={"workspace_uuid": "nope"})).status_code == 404


async def test_organization_role(admin: httpx.AsyncClient) -> None:
    group = await _group(admin)
    a = await create_user(admin, "a@example.com")
    await admin.post(f"/v1/admin/user-groups/{group}/members", json={"user_uuids": [a]})
    url = f"/v1/admin/user-groups/{group}/organization-role"
    assert (await admin.patch(url, json={"organization_role": "B"})).status_code == 204
    assert (await admin.get(f"/v1/admin/user-groups/{group}")).json()["organization_role"] == (
        "billing_manager"
    )
    member = (await admin.get(f"/v1/admin/users/{a}")).json()
    assert BILLING in member["raw_roles"]
    assert (await admin.patch(url, json={"organization_role": "Z"})).status_code == 422
    assert (await admin.patch(url, json={})).status_code == 422
    missing = await admin.patch(
        "/v1/admin/user-groups/nope/organization-role", json={"organization_role": "B"}
    )
    assert missing.status_code == 404


async def test_groups_of_another_organization_are_not_found(
    app: FastAPI, admin: httpx.AsyncClient
) -> None:
    group = await _group(admin)
    ws = await create_workspace(admin, "team", await owner_id(admin))
    key, _, foreign_ws = await foreign_admin_key(app)
    async with admin_client(app, key) as foreign:
        assert (await foreign.get("/v1/admin/user-groups")).json()["total"] == 0
        base = f"/v1/admin/user-groups/{group}"
        for method, path, body in (
            ("GET", "", None),
            ("PATCH", "", {}),
            ("DELETE", "", None),
            ("GET", "/members", None),
            ("POST", "/members", {"user_uuids": []}),
            ("DELETE", "/members", {"user_uuids": []}),
            ("GET", "/workspaces", None),
            ("POST", "/workspaces", {"workspace_uuid": foreign_ws}),
            ("PATCH", f"/workspaces/{ws}", {}),
            ("DELETE", f"/workspaces/{ws}", None),
            ("PATCH", "/organization-role", {"organization_role": "M"}),
        ):
            resp = await foreign.request(method, base + path, json=body)
            assert resp.status_code == 404, (method, path)
        own = (await foreign.post("/v1/admin/user-groups", json={"name": "theirs"})).json()["uuid"]
        resp = await foreign.post(
            "/v1/admin/user-groups/provision-workspace",
            json={"user_group_uuid": own, "workspace_uuid": ws},
        )
        assert resp.status_code == 404  # our workspace is not theirs
    assert (await admin.get(f"/v1/admin/user-groups/{group}")).status_code == 200
