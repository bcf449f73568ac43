"""All 37 admin operations exist, open only to an admin key, and every change is audited."""

from __future__ import annotations

import httpx
import orjson
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.admin.tables import AuditEntry
from maestrale.core.auth.keys import hash_key
from maestrale.core.auth.tables import ApiKey
from tests.admin.conftest import (
    admin_client,
    create_key,
    create_user,
    create_workspace,
    default_workspace_id,
    owner_id,
)
from tests.support.app_fixtures import ADMIN_KEY, API_KEY

OPERATIONS = [
    ("GET", "/v1/admin/api-keys"),
    ("POST", "/v1/admin/api-keys"),
    ("DELETE", "/v1/admin/api-keys/{key_id}"),
    ("GET", "/v1/admin/users"),
    ("POST", "/v1/admin/users"),
    ("GET", "/v1/admin/users-invite"),
    ("POST", "/v1/admin/users-invite"),
    ("DELETE", "/v1/admin/users-invite/{invite_uuid}"),
    ("GET", "/v1/admin/users/{user_id}"),
    ("DELETE", "/v1/admin/users/{user_id}"),
    ("PATCH", "/v1/admin/users/{user_id}"),
    ("GET", "/v1/admin/roles"),
    ("GET", "/v1/admin/workspaces"),
    ("POST", "/v1/admin/workspaces"),
    ("DELETE", "/v1/admin/workspaces/{workspace_uuid}"),
    ("PATCH", "/v1/admin/workspaces/{workspace_uuid}"),
    ("POST", "/v1/admin/workspaces/{workspace_uuid}/add-users"),
    ("PATCH", "/v1/admin/workspaces/{workspace_uuid}/users"),
    ("DELETE", "/v1/admin/workspaces/{workspace_uuid}/remove-users"),
    ("GET", "/v1/admin/user-groups"),
    ("POST", "/v1/admin/user-groups"),
    ("POST", "/v1/admin/user-groups/provision-workspace"),
    ("GET", "/v1/admin/user-groups/{group_uuid}"),
    ("DELETE", "/v1/admin/user-groups/{group_uuid}"),
    ("PATCH", "/v1/admin/user-groups/{group_uuid}"),
    ("GET", "/v1/admin/user-groups/{group_uuid}/members"),
    ("POST", "/v1/admin/user-groups/{group_uuid}/members"),
    ("DELETE", "/v1/admin/user-groups/{group_uuid}/members"),
    ("GET", "/v1/admin/user-groups/{group_uuid}/workspaces"),
    ("POST", "/v1/admin/user-groups/{group_uuid}/workspaces"),
    ("PATCH", "/v1/admin/user-groups/{group_uuid}/workspaces/{workspace_uuid}"),
    ("DELETE", "/v1/admin/user-groups/{group_uuid}/workspaces/{workspace_uuid}"),
    ("PATCH", "/v1/admin/user-groups/{group_uuid}/organization-role"),
    ("GET", "/v1/admin/rate-limit"),
    ("GET", "/v1/admin/spend-limit"),
    ("POST", "/v1/admin/spend-limit"),
    ("GET", "/v1/admin/usage"),
]


def _concrete(path: str) -> str:
    for name in ("key_id", "invite_uuid", "user_id", "workspace_uuid", "group_uuid"):
        path = path.replace("{" + name + "}", "00000000-0000-0000-0000-000000000000")
    return path


def test_all_37_operations_are_routes(app: FastAPI) -> None:
    assert len(set(OPERATIONS)) == 37
    documented = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        if path.startswith("/v1/admin/")
        for method in operations
    }
    assert documented == set(OPERATIONS)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": f"Bearer {API_KEY}"},  # a standard key of an admin user
        {"x-api-key": API_KEY},
        {"Authorization": f"Bearer {ADMIN_KEY}"},
        {"x-api-key": "msa_wrong"},
    ],
)
async def test_every_operation_refuses_anything_but_an_admin_key(
    app: FastAPI, headers: dict[str, str]
) -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test", headers=headers
    ) as c:
        for method, path in OPERATIONS:
            resp = await c.request(method, _concrete(path), json={})
            assert resp.status_code == 401, (method, path, resp.text)
            assert resp.json()["type"] == "authentication_error"


async def test_every_operation_opens_to_the_admin_key(admin: httpx.AsyncClient) -> None:
    for method, path in OPERATIONS:
        resp = await admin.request(method, _concrete(path), json={})
        assert resp.status_code != 401, (method, path)
        assert resp.status_code < 500, (method, path, resp.text)
        if resp.status_code == 404:
            assert resp.json()["code"] != "route_not_found", (method, path)


async def test_unknown_admin_paths_stay_hidden(app: FastAPI, admin: httpx.AsyncClient) -> None:
    assert (await admin.get("/v1/admin/nothing")).json()["code"] == "route_not_found"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        assert (await c.get("/v1/admin/nothing")).status_code == 401


async def test_every_change_is_audited_without_secrets(
    app: FastAPI, admin: httpx.AsyncClient
) -> None:
    owner, ws = await owner_id(admin), await default_workspace_id(admin)
    user = await create_user(admin, "a@example.com")
    await admin.patch(f"/v1/admin/users/{user}", json={"role_names": ["billing_manager"]})
    team = await create_workspace(admin, "team", owner)
    await admin.patch(f"/v1/admin/workspaces/{team}", json={"name": "renamed"})
    await admin.post(
        f"/v1/admin/workspaces/{ws}/add-users", json={"members": [{"user_uuid": user}]}
    )
    key = await create_key(admin, user, ws)
    await admin.delete(f"/v1/admin/api-keys/{key['key_id']}")
    await admin.post("/v1/admin/users-invite", json={"email": "b@example.com"})
    group = (await admin.post("/v1/admin/user-groups", json={"name": "g"})).json()["uuid"]
    await admin.post(f"/v1/admin/user-groups/{group}/members", json={"user_uuids": [user]})
    await admin.post("/v1/admin/spend-limit", json={"amount": 12})
    await admin.delete(f"/v1/admin/workspaces/{team}")
    await admin.delete(f"/v1/admin/users/{user}")
    async with app.state.services.db.transaction() as work:
        admin_key_id = (
            await work.session.execute(
                select(ApiKey.id).where(ApiKey.key_hash == hash_key(ADMIN_KEY))
            )
        ).scalar_one()
        entries = list(
            (
                await work.session.execute(select(AuditEntry).order_by(AuditEntry.created_at))
            ).scalars()
        )
    actions = [e.action for e in entries]
    for expected in (
        "user.create",
        "user.update",
        "workspace.create",
        "workspace.update",
        "workspace.member_add",
        "api_key.create",
        "api_key.delete",
        "invitation.create",
        "user_group.create",
        "user_group.members_add",
        "limits.spend",
        "workspace.archive",
        "user.delete",
    ):
        assert expected in actions, expected
    for entry in entries:
        assert entry.actor == "admin_api" and entry.actor_key_id == admin_key_id
        assert entry.actor_user_id == owner and entry.created_at is not None
        dump = orjson.dumps([entry.before, entry.after]).decode()
        assert key["key"] not in dump and ADMIN_KEY not in dump
    update = next(e for e in entries if e.action == "user.update")
    assert update.before is not None and update.after is not None
    assert update.before["roles"] == ["member"] and update.after["roles"] == ["billing_manager"]
    spend = next(e for e in entries if e.action == "limits.spend")
    assert spend.before == {"monthly_spend_limit": None}
    assert spend.after is not None and spend.after["monthly_spend_limit"] == 12
    deleted_key = next(e for e in entries if e.action == "api_key.delete")
    assert deleted_key.target_id == key["key_id"]
    assert deleted_key.before is not None and deleted_key.before["hidden_key"] == key["hidden_key"]


async def test_a_refused_change_is_not_audited(app: FastAPI, admin: httpx.AsyncClient) -> None:
    await admin.delete(f"/v1/admin/users/{await owner_id(admin)}")  # last admin: 409
    async with app.state.services.db.transaction() as work:
        assert list((await work.session.execute(select(AuditEntry))).scalars()) == []


async def test_admin_key_of_another_kind_of_caller(app: FastAPI) -> None:
    """A standard key whose user is organization_admin still cannot open admin routes."""
    async with admin_client(app, API_KEY) as c:
        assert (await c.get("/v1/admin/users")).status_code == 401
