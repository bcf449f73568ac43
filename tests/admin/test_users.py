"""/v1/admin/users, /v1/admin/users-invite and /v1/admin/roles."""

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

pytestmark = pytest.mark.both_databases("maestrale.admin.users.repository")

ADMIN_UUID = "7bde5959-d676-47d2-b779-35b64323d278"
MEMBER_UUID = "0d48f530-095c-43fe-8aea-6673bcacabe6"
BILLING_UUID = "c955f4e1-9477-43f0-8349-6fbc629fccc9"


async def test_create_users_reports_invalid_emails(admin: httpx.AsyncClient) -> None:
    body = [
        {"email": "Ada@Example.com", "first_name": "Ada", "last_name": "Lovelace"},
        {"email": "not-an-email", "first_name": "X", "last_name": "Y"},
        {"email": "ada@example.com", "first_name": "Dup", "last_name": "Licate"},
        {"email": "owner@localhost", "first_name": "O", "last_name": "W"},  # no TLD: invalid
        {
            "email": "alan@example.com",
            "first_name": "Alan",
            "last_name": "Turing",
            "role_names": ["billing_manager"],
            "subscription_types": ["CHAT"],
        },
    ]
    resp = await admin.post("/v1/admin/users", json=body)
    assert resp.status_code == 200
    out = resp.json()
    assert set(out["email_to_user_id"]) == {"ada@example.com", "alan@example.com"}
    assert out["invalid_emails"] == ["not-an-email", "ada@example.com", "owner@localhost"]
    alan = (
        await admin.get(f"/v1/admin/users/{out['email_to_user_id']['alan@example.com']}")
    ).json()
    assert alan["raw_roles"] == [BILLING_UUID]
    assert alan["raw_role"] == BILLING_UUID
    assert alan["first_name"] == "Alan"
    assert alan["name"] == "Alan Turing"
    assert alan["subscription_types"] == ["CHAT"]
    assert alan["workspaces"] == []
    for required in ("created_at", "email", "name", "oid_id", "raw_role", "raw_roles", "uuid"):
        assert required in alan
    again = await admin.post("/v1/admin/users", json=body[:1])
    assert again.json() == {"email_to_user_id": {}, "invalid_emails": ["Ada@Example.com"]}


async def test_create_users_validation(admin: httpx.AsyncClient) -> None:
    bad = [
        {"email": "a@b.co"},  # names are required
        [
            {
                "email": "a@b.co",
                "first_name": "A",
                "last_name": "B",
                "role": "A",
                "role_name": "member",
            }
        ],
        [
            {
                "email": "a@b.co",
                "first_name": "A",
                "last_name": "B",
                "role_names": ["member"],
                "roles": [MEMBER_UUID],
            }
        ],
        [{"email": "a@b.co", "first_name": "A", "last_name": "B", "role_names": ["boss"]}],
        [{"email": "a@b.co", "first_name": "A", "last_name": "B", "roles": ["Z"]}],
        [{"email": 3, "first_name": "A", "last_name": "B"}],
    ]
    for body in bad:
        resp = await admin.post("/v1/admin/users", json=body)
        assert resp.status_code == 422, body
        assert resp.json()["detail"][0]["msg"]
    exclusive = await admin.post("/v1/admin/users", json=bad[1])
    assert "mutually exclusive" in exclusive.json()["detail"][0]["msg"]
    ok = await admin.post(
        "/v1/admin/users",
        json=[
            {
                "email": "a@b.co",
                "first_name": "A",
                "last_name": "B",
                "role": "A",
                "unknown_field": True,
            }
        ],
    )
    assert ok.status_code == 200
    user = (await admin.get(f"/v1/admin/users/{ok.json()['email_to_user_id']['a@b.co']}")).json()
    assert user["raw_roles"] == [ADMIN_UUID]


async def test_list_users_pages_members_then_invitations(admin: httpx.AsyncClient) -> None:
    for i in range(3):
        await create_user(admin, f"user{i}@example.com")
    invite = await admin.post(
        "/v1/admin/users-invite", json={"email": "x1@example.com, x2@example.com"}
    )
    assert invite.json()["invited_members_count"] == 2
    whole = (await admin.get("/v1/admin/users", params={"page_size": 100})).json()
    assert whole["total"] == 6  # owner + 3 users + 2 invitations
    assert len(whole["members"]) == 4 and len(whole["invites"]) == 2
    seen_members: list[str] = []
    seen_invites: list[str] = []
    for page in (1, 2, 3):
        body = (await admin.get("/v1/admin/users", params={"page": page, "page_size": 2})).json()
        assert (body["page"], body["page_size"], body["total"]) == (page, 2, 6)
        seen_members += [m["uuid"] for m in body["members"]]
        seen_invites += [i["uuid"] for i in body["invites"]]
        assert len(body["members"]) + len(body["invites"]) == 2
    assert seen_members == [m["uuid"] for m in whole["members"]]
    assert seen_invites == [i["uuid"] for i in whole["invites"]]
    filtered = (await admin.get("/v1/admin/users", params={"email": "X1@"})).json()
    assert filtered["total"] == 1 and filtered["invites"][0]["email"] == "x1@example.com"
    assert filtered["invites"][0]["expired"] is False
    assert (await admin.get("/v1/admin/users", params={"page": 0})).status_code == 422
    assert (await admin.get("/v1/admin/users", params={"page_size": 1001})).status_code == 422


async def test_invitations(app: FastAPI, admin: httpx.AsyncClient) -> None:
    owner = await owner_id(admin)
    ws = await create_workspace(admin, "team", owner)
    resp = await admin.post(
        "/v1/admin/users-invite",
        json={
            "email": "grace@example.com,\nowner@localhost, bad@@x, grace@example.com",
            "role_names": ["billing_manager"],
            "workspace_uuids": [ws],
            "email_language": "fr",
        },
    )
    assert resp.status_code == 200
    assert resp.json() == {
        "already_members": ["owner@localhost"],
        "invalid_emails": ["bad@@x"],
        "invited_members_count": 1,
    }
    invites = (await admin.get("/v1/admin/users-invite")).json()
    assert invites == [
        {
            "email": "grace@example.com",
            "invite_uuid": invites[0]["invite_uuid"],
            "role": BILLING_UUID,
            "roles": [BILLING_UUID],
        }
    ]
    # Creating the user accepts the invitation: its roles and workspaces apply.
    grace = await create_user(admin, "grace@example.com")
    member = (await admin.get(f"/v1/admin/users/{grace}")).json()
    assert member["raw_roles"] == [BILLING_UUID]
    assert [w["uuid"] for w in member["workspaces"]] == [ws]
    assert (await admin.get("/v1/admin/users-invite")).json() == []

    second = await admin.post("/v1/admin/users-invite", json={"email": "hopper@example.com"})
    assert second.json()["invited_members_count"] == 1
    invite_id = (await admin.get("/v1/admin/users-invite")).json()[0]["invite_uuid"]
    deleted = await admin.delete(f"/v1/admin/users-invite/{invite_id}")
    assert deleted.status_code == 200 and deleted.json()["message"]
    assert (await admin.delete(f"/v1/admin/users-invite/{invite_id}")).status_code == 404


async def test_invitation_errors(admin: httpx.AsyncClient) -> None:
    cases = [
        ({}, 422),
        ({"email": ""}, 422),
        ({"email": "a@b.co", "role": "M", "role_name": "member"}, 422),
        ({"email": "a@b.co", "role_names": ["member"], "roles": [MEMBER_UUID]}, 422),
        ({"email": "a@b.co", "email_language": "klingon"}, 422),
        ({"email": "a@b.co", "workspace_uuids": ["nope"]}, 404),
    ]
    for body, status in cases:
        assert (await admin.post("/v1/admin/users-invite", json=body)).status_code == status, body


async def test_update_user(admin: httpx.AsyncClient) -> None:
    user = await create_user(admin, "u@example.com")
    resp = await admin.patch(
        f"/v1/admin/users/{user}",
        json={
            "role_names": ["organization_admin", "billing_manager"],
            "subscription_types": ["CHAT"],
        },
    )
    assert resp.status_code == 200
    assert resp.json()["raw_roles"] == [ADMIN_UUID, BILLING_UUID]
    assert resp.json()["subscription_types"] == ["CHAT"]
    resp = await admin.patch(f"/v1/admin/users/{user}", json={"roles": ["M"]})
    assert resp.json()["raw_roles"] == [MEMBER_UUID]
    assert resp.json()["subscription_types"] == ["CHAT"]  # untouched
    both = await admin.patch(f"/v1/admin/users/{user}", json={"role": "A", "role_name": "member"})
    assert both.status_code == 422
    both = await admin.patch(
        f"/v1/admin/users/{user}", json={"role_names": ["member"], "roles": ["A"]}
    )
    assert both.status_code == 422
    assert (await admin.patch("/v1/admin/users/nope", json={})).status_code == 404


async def test_the_last_organization_admin_stays(admin: httpx.AsyncClient) -> None:
    owner = await owner_id(admin)
    demote = await admin.patch(f"/v1/admin/users/{owner}", json={"role_names": ["member"]})
    assert demote.status_code == 409
    assert demote.json()["code"] == "last_organization_admin"
    assert (await admin.delete(f"/v1/admin/users/{owner}")).status_code == 409
    other = await create_user(admin, "second@example.com", role_names=["organization_admin"])
    assert (await admin.patch(f"/v1/admin/users/{owner}", json={"role": "M"})).status_code == 200
    assert (await admin.delete(f"/v1/admin/users/{other}")).status_code == 409


async def test_deleting_a_user_revokes_their_keys(app: FastAPI, admin: httpx.AsyncClient) -> None:
    ws = await default_workspace_id(admin)
    user = await create_user(admin, "leaver@example.com")
    await admin.post(
        f"/v1/admin/workspaces/{ws}/add-users", json={"members": [{"user_uuid": user}]}
    )
    key = await create_key(admin, user, ws)
    async with make_client(app, key["key"]) as c:
        assert (await c.get("/v1/models")).status_code == 200
        resp = await admin.delete(f"/v1/admin/users/{user}")
        assert resp.status_code == 200
        assert resp.json() == {"message": "Organization member deleted successfully"}
        assert (await c.get("/v1/models")).status_code == 401
    assert (await admin.get(f"/v1/admin/users/{user}")).status_code == 404
    assert (await admin.delete(f"/v1/admin/users/{user}")).status_code == 404


async def test_roles(admin: httpx.AsyncClient) -> None:
    body = (await admin.get("/v1/admin/roles")).json()
    org = {r["name"]: r for r in body["organization_roles"]}
    assert set(org) == {"member", "billing_manager", "organization_admin"}
    assert org["organization_admin"]["uuid"] == ADMIN_UUID
    assert all(r["is_custom_role"] is False and r["description"] for r in org.values())
    ws = {r["name"]: r["uuid"] for r in body["workspace_roles"]}
    assert ws["workspace_admin"] == R.WORKSPACE.uuid_of("workspace_admin")
    assert {"user", "dev", "billing", "workspace_contributor", "observability_viewer"} <= set(ws)


async def test_users_of_another_organization_are_not_found(
    app: FastAPI, admin: httpx.AsyncClient
) -> None:
    user = await create_user(admin, "mine@example.com")
    await admin.post("/v1/admin/users-invite", json={"email": "invited@example.com"})
    invite_id = (await admin.get("/v1/admin/users-invite")).json()[0]["invite_uuid"]
    key, _, _ = await foreign_admin_key(app)
    async with admin_client(app, key) as foreign:
        assert (await foreign.get(f"/v1/admin/users/{user}")).status_code == 404
        assert (await foreign.patch(f"/v1/admin/users/{user}", json={})).status_code == 404
        assert (await foreign.delete(f"/v1/admin/users/{user}")).status_code == 404
        assert (await foreign.delete(f"/v1/admin/users-invite/{invite_id}")).status_code == 404
        listing = (await foreign.get("/v1/admin/users")).json()
        assert [m["email"] for m in listing["members"]] == ["someone@foreign.test"]
        assert listing["invites"] == [] and listing["total"] == 1
        assert (await foreign.get("/v1/admin/users-invite")).json() == []
    assert (await admin.get(f"/v1/admin/users/{user}")).status_code == 200
