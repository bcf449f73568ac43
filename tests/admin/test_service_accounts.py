"""/v1/service-accounts: a workspace's non-human principals, their roles and their keys."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from maestrale.accounting.tables import ChatCompletionEvent, UsageRecord
from maestrale.admin import roles as R
from maestrale.admin.tables import AuditEntry
from maestrale.core.auth.tables import ServiceAccount
from tests.admin.conftest import default_workspace_id
from tests.support.app_fixtures import ADMIN_KEY, create_tenant, make_client, member_key

pytestmark = pytest.mark.both_databases("maestrale.admin.service_accounts.repository")

SA = "/v1/service-accounts"
SHAPE = {
    "id",
    "name",
    "customer_id",
    "organization_id",
    "workspace_id",
    "description",
    "created_at",
    "updated_at",
    "deleted_at",
}
CONTRIBUTOR = R.WORKSPACE.uuid_of("workspace_contributor")
CLOUD_ADMIN = R.WORKSPACE.uuid_of("mistral_cloud_admin")


async def _count(app: FastAPI, *where: Any) -> int:
    async with app.state.services.db.transaction() as work:
        stmt = select(func.count()).select_from(ServiceAccount).where(*where)
        return int((await work.session.execute(stmt)).scalar_one())


async def _create(client: httpx.AsyncClient, ws: str, name: str, **extra: Any) -> dict[str, Any]:
    resp = await client.post(SA, json={"name": name, "workspace_id": ws, **extra})
    assert resp.status_code == 201, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def _account_key(admin: httpx.AsyncClient, ws: str, account_id: str) -> str:
    resp = await admin.post(
        "/v1/admin/api-keys", json={"service_account_id": account_id, "workspace_uuid": ws}
    )
    assert resp.status_code == 200, resp.text
    return str(resp.json()["key"])


async def test_lifecycle_list_and_audit(
    app: FastAPI, client: httpx.AsyncClient, admin: httpx.AsyncClient
) -> None:
    ws = await default_workspace_id(admin)
    ci = await _create(client, ws, "ci", description="Nightly builds", role_ids=[CONTRIBUTOR])
    assert set(ci) == SHAPE
    assert ci["workspace_id"] == ws and ci["customer_id"] == ci["organization_id"]
    assert ci["description"] == "Nightly builds" and ci["deleted_at"] is None
    bot = await _create(client, ws, "bot")  # no role_ids: no role
    assert (await client.get(f"{SA}/{bot['id']}/roles")).json() == {"items": []}
    assert (await client.get(f"{SA}/{ci['id']}/roles")).json() == {
        "items": [{"role_id": CONTRIBUTOR}]
    }
    assert (await client.get(f"{SA}/{ci['id']}")).json() == ci

    def names(resp: httpx.Response) -> list[str]:
        assert resp.status_code == 200, resp.text
        return [item["name"] for item in resp.json()["items"]]

    assert names(await client.get(SA, params={"offset": 0, "limit": 10})) == ["ci", "bot"]
    assert names(await client.get(SA, params={"order": "desc", "limit": 1})) == ["bot"]
    assert names(await client.get(SA, params={"offset": 1, "limit": 1})) == ["bot"]
    assert names(await client.get(SA, params={"q": "NIGHTLY", "workspace_id": ws})) == ["ci"]
    assert names(await client.get(SA, params={"q": "%"})) == []  # a literal, not a wildcard

    patched = await client.patch(f"{SA}/{ci['id']}", json={"description": None})
    assert patched.status_code == 200 and patched.json()["description"] is None
    assert patched.json()["name"] == "ci"
    put = await client.put(f"{SA}/{bot['id']}/roles", json={"role_ids": ["dev", CONTRIBUTOR]})
    assert put.status_code == 200
    dev = R.WORKSPACE.uuid_of("dev")
    assert put.json() == {"items": [{"role_id": dev}, {"role_id": CONTRIBUTOR}]}

    assert (await client.delete(f"{SA}/{ci['id']}")).status_code == 204
    assert (await client.get(f"{SA}/{ci['id']}")).status_code == 404
    assert (await client.delete(f"{SA}/{ci['id']}")).status_code == 404
    assert names(await client.get(SA)) == ["bot"]
    listed = (await client.get(SA, params={"include_deleted": True})).json()["items"]
    assert [a["deleted_at"] is not None for a in listed] == [True, False]
    # The name of a deleted account is free again.
    await _create(client, ws, "ci")

    async with app.state.services.db.transaction() as work:
        stmt = select(AuditEntry).where(AuditEntry.target_id == ci["id"])
        entries = list((await work.session.execute(stmt.order_by(AuditEntry.created_at))).scalars())
    assert [(e.action, e.actor) for e in entries] == [
        ("service_account.create", "workspace_api"),
        ("service_account.update", "workspace_api"),
        ("service_account.delete", "workspace_api"),
    ]
    assert entries[0].actor_user_id is not None and entries[1].before is not None


async def test_account_keys_act_with_its_roles_and_die_with_it(
    app: FastAPI, client: httpx.AsyncClient, admin: httpx.AsyncClient
) -> None:
    ws = await default_workspace_id(admin)
    account = await _create(client, ws, "worker")
    key = await _account_key(admin, ws, account["id"])
    async with make_client(app, key) as sa:
        # Its own calls are attributed to it in accounting and events.
        chat = {"model": "maestrale-echo", "messages": [{"role": "user", "content": "hi"}]}
        assert (await sa.post("/v1/chat/completions", json=chat)).status_code == 200
        await app.state.services.recorder.flush()
        async with app.state.services.db.transaction() as work:
            usage = (await work.session.execute(select(UsageRecord))).scalars().all()
            events = (await work.session.execute(select(ChatCompletionEvent))).scalars().all()
        assert [u.service_account_id for u in usage] == [account["id"]]
        assert [e.service_account_id for e in events] == [account["id"]]
        who = (await sa.get("/v1/whoami")).json()["principal"]
        assert who == {
            "principal_type": "service_account",
            "service_account_id": account["id"],
            "name": "worker",
        }

        # No role: it deletes nothing the workspace shares; a granted role applies at once.
        refused = await sa.delete("/v1/files/00000000-0000-0000-0000-000000000000")
        assert refused.status_code == 403 and refused.json()["code"] == "insufficient_role"
        put = await client.put(f"{SA}/{account['id']}/roles", json={"role_ids": [CONTRIBUTOR]})
        assert put.status_code == 200
        assert (
            await sa.delete("/v1/files/00000000-0000-0000-0000-000000000000")
        ).status_code == 404

        # Even with workspace_admin, an account's key never manages accounts.
        await client.put(f"{SA}/{account['id']}/roles", json={"role_ids": ["workspace_admin"]})
        wrong = await sa.get(SA)
        assert wrong.status_code == 403 and wrong.json()["code"] == "wrong_key_kind"

        # Deleting the account revokes its (cached) key at once.
        assert (await sa.get("/v1/models")).status_code == 200
        assert (await client.delete(f"{SA}/{account['id']}")).status_code == 204
        assert (await sa.get("/v1/models")).status_code == 401
    # A deleted account gets no new key.
    resp = await admin.post(
        "/v1/admin/api-keys", json={"service_account_id": account["id"], "workspace_uuid": ws}
    )
    assert resp.status_code == 404 and resp.json()["code"] == "service_account_not_found"


async def test_refusals(app: FastAPI, client: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    ws = await default_workspace_id(admin)
    other = await create_tenant(app.state.services.db)
    async with make_client(app, other.key) as foreign:  # a workspace key: it manages its own
        theirs = await _create(foreign, other.tenant.workspace_id, "theirs")
        mine_there = await foreign.post(SA, json={"name": "x", "workspace_id": ws})
        assert mine_there.status_code == 404
    mine = await _create(client, ws, "mine")

    # Unknown ids and another workspace's ids: 404 on every route.
    for account_id in ("nope", theirs["id"]):
        for method, path, body in (
            ("GET", "", None),
            ("PATCH", "", {"description": "x"}),
            ("DELETE", "", None),
            ("GET", "/roles", None),
            ("PUT", "/roles", {"role_ids": [CONTRIBUTOR]}),
        ):
            resp = await client.request(method, f"{SA}/{account_id}{path}", json=body)
            assert resp.status_code == 404, (method, path, resp.text)
            assert resp.json()["code"] == "service_account_not_found"
    other_ws = {"workspace_id": other.tenant.workspace_id}
    assert (await client.get(SA, params=other_ws)).status_code == 404
    assert (await client.get(f"{SA}/assignable-roles", params=other_ws)).status_code == 404
    assert (await client.post(SA, json={"name": "y", **other_ws})).status_code == 404
    key_there = await admin.post(
        "/v1/admin/api-keys", json={"service_account_id": theirs["id"], "workspace_uuid": ws}
    )
    assert key_there.status_code == 404

    # Invalid bodies and parameters: 422, nothing stored.
    before = await _count(app)
    invalid: list[dict[str, Any]] = [
        {"workspace_id": ws},
        {"name": "", "workspace_id": ws},
        {"name": "z", "workspace_id": ws, "role_ids": ["no-such-role"]},
        {"name": "z", "workspace_id": ws, "description": "d" * 2001},
        {"name": "z", "workspace_id": ws, "role_ids": "dev"},
        {"name": "z" * 201, "workspace_id": ws},
    ]
    for body in invalid:
        assert (await client.post(SA, json=body)).status_code == 422, body
    for roles in ([], ["no-such-role"], None):
        resp = await client.put(f"{SA}/{mine['id']}/roles", json={"role_ids": roles})
        assert resp.status_code == 422
    assert (await client.patch(f"{SA}/{mine['id']}", json={"description": 3})).status_code == 422
    for params in ({"limit": 0}, {"limit": 1001}, {"offset": -1}, {"order": "up"}):
        assert (await client.get(SA, params=params)).status_code == 422, params
    assert (await client.get(f"{SA}/assignable-roles")).status_code == 422
    both = {"user_id": "u", "service_account_id": mine["id"], "workspace_uuid": ws}
    assert (await admin.post("/v1/admin/api-keys", json=both)).status_code == 422
    dup = await client.post(SA, json={"name": "MINE", "workspace_id": ws})
    assert dup.status_code == 409 and dup.json()["code"] == "service_account_exists"
    assert await _count(app) == before
    assert (await client.get(f"{SA}/{mine['id']}/roles")).json() == {"items": []}

    # Wrong key kinds: 403; a user without workspace_admin: 403.
    async with make_client(app, ADMIN_KEY) as admin_as_bearer:
        resp = await admin_as_bearer.get(SA)
        assert resp.status_code == 403 and resp.json()["code"] == "wrong_key_kind"
    user_key = await member_key(app, "dev@example.com", workspace_roles=["dev"])
    async with make_client(app, user_key) as dev:
        resp = await dev.post(SA, json={"name": "w", "workspace_id": ws})
        assert resp.status_code == 403 and resp.json()["code"] == "insufficient_role"
        assert (await dev.get(f"{SA}/{mine['id']}")).status_code == 403

    # A workspace admin grants no role above its own; the route lists what it may grant.
    ws_admin = await member_key(app, "wsa@example.com", workspace_roles=["workspace_admin"])
    async with make_client(app, ws_admin) as wa:
        listed = (await wa.get(f"{SA}/assignable-roles", params={"workspace_id": ws})).json()
        names = [role["name"] for role in listed["items"]]
        assert "workspace_admin" in names and "mistral_cloud_admin" not in names
        assert all(
            set(r) == {"uuid", "name", "description", "is_custom_role"} for r in listed["items"]
        )
        cloud = {"name": "cloud", "workspace_id": ws, "role_ids": [CLOUD_ADMIN]}
        refused = await wa.post(SA, json=cloud)
        assert refused.status_code == 403 and refused.json()["code"] == "role_not_assignable"
        assert await _count(app, ServiceAccount.name == "cloud") == 0
        # ... nor takes one away that it could not grant.
        granted = await client.put(f"{SA}/{mine['id']}/roles", json={"role_ids": [CLOUD_ADMIN]})
        assert granted.status_code == 200
        resp = await wa.put(f"{SA}/{mine['id']}/roles", json={"role_ids": [CONTRIBUTOR]})
        assert resp.status_code == 403
    owner_roles = (await client.get(f"{SA}/assignable-roles", params={"workspace_id": ws})).json()
    assert len(owner_roles["items"]) == len(R.WORKSPACE_ROLES)
