"""What mistralai 3.x sends and reads of connectors, beside 2.8's: the 3.x create and update
bodies (`global_headers`, `auth_methods`, `protocol`), the `supports_mcp` filter and flag,
credentials and activation under `{consumer_scope}`, and sharing with the organization."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.connectors.tables import ConnectorCredential
from maestrale.core.auth.repository import KeyRepository, TenancyRepository
from tests.support.app_fixtures import create_tenant, make_client, member_key
from tests.support.mcp_servers import ServerProbe

pytestmark = pytest.mark.both_databases("maestrale.connectors.repository")

BEARER = {"method_type": "bearer", "headers": [{"name": "X-Api-Key", "is_secret": True}]}


async def _create(client: httpx.AsyncClient, url: str, name: str, **extra: Any) -> dict[str, Any]:
    body = {"name": name, "description": "d", "server": url, "protocol": "mcp", **extra}
    response = await client.post("/v1/connectors", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def test_the_3x_bodies_and_the_mcp_flag(
    conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    created = await _create(
        conn_client,
        url,
        "three",
        global_headers={"X-Tenant": {"value": "acme", "is_secret": False}},
        auth_methods=[
            BEARER,
            {
                "method_type": "oauth2",
                "grant_type": "authorization_code",
                "auth_data": {"client_id": "cid", "client_secret": "hidden"},
            },
        ],
    )
    assert created["supports_mcp"] is True and created["protocol"] == "mcp"
    assert created["blocked_by"] == [] and "hidden" not in str(created)
    methods = {m["method_type"]: m for m in created["supported_auth_methods"]}
    assert set(methods) == {"bearer", "oauth2"}
    assert methods["bearer"]["headers"][0]["name"] == "X-Api-Key"
    assert methods["oauth2"]["grant_type"] == "authorization_code"
    seen = await conn_client.post("/v1/connectors/three/tools/headers/call", json={})
    assert "acme" in seen.json()["content"][0]["text"]  # the global header reached the server

    for params, count in (({"supports_mcp": "true"}, 1), ({"supports_mcp": "false"}, 0)):
        listed = (await conn_client.get("/v1/connectors", params=params)).json()["items"]
        assert len(listed) == count, params

    # An OAuth2 method's client, scopes and metadata are the ones the authorization uses.
    oauth = await _create(
        conn_client,
        url,
        "oauth",
        auth_methods=[
            {
                "method_type": "oauth2",
                "auth_data": {"client_id": "cid", "client_scopes": ["read", "write"]},
                "oauth2_server_metadata": {
                    "issuer": "https://auth.invalid",
                    "authorization_endpoint": "https://auth.invalid/authorize",
                    "token_endpoint": "https://auth.invalid/token",
                },
            }
        ],
    )
    got = await conn_client.get(f"/v1/connectors/{oauth['id']}/auth_url")
    assert got.status_code == 200, got.text
    start = await conn_client.get(got.json()["auth_url"].removeprefix("http://test"))
    authorize = parse_qs(urlsplit(start.headers["location"]).query)
    assert start.headers["location"].startswith("https://auth.invalid/authorize?")
    assert authorize["client_id"] == ["cid"] and authorize["scope"] == ["read write"]
    assert (await conn_client.delete(f"/v1/connectors/{oauth['id']}")).status_code == 200

    updated = await conn_client.patch(
        f"/v1/connectors/{created['id']}",
        json={"protocol": "mcp", "title": "Three", "auth_methods": [{"method_type": "none"}]},
    )
    assert updated.status_code == 200, updated.text
    assert updated.json()["title"] == "Three"
    assert [m["method_type"] for m in updated.json()["supported_auth_methods"]] == ["none"]

    bad_bodies: list[dict[str, Any]] = [
        {"protocol": "http"},
        {"auth_methods": [{"method_type": "oauth2", "grant_type": "client_credentials"}]},
        {"auth_methods": [BEARER, BEARER]},
        {"auth_methods": [{"method_type": "bearer", "auth_data": {"client_id": "x"}}]},
        {"headers": {"X-A": "1"}, "global_headers": {"X-A": {"value": "2"}}},
        {"global_headers": {"X-B": {"value": "a\r\nInjected: 1"}}},
        {"auth_data": {"client_id": "c", "client_scopes": ["has space"]}},
    ]
    for extra in bad_bodies:
        body = {"name": "bad", "description": "d", "server": url, **extra}
        refused = await conn_client.post("/v1/connectors", json=body)
        assert refused.status_code == 422, (extra, refused.text)
        refused = await conn_client.patch(f"/v1/connectors/{created['id']}", json=extra)
        assert refused.status_code == 422, (extra, refused.text)
    assert [c["name"] for c in (await conn_client.get("/v1/connectors")).json()["items"]] == [
        "three"
    ]
    assert (await conn_client.get("/v1/connectors/three")).json()["title"] == "Three"


async def test_credentials_and_activation_under_a_consumer_scope(
    conn_app: FastAPI, conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    cid = (await _create(conn_client, url, "scoped", visibility="shared_workspace"))["id"]
    base = f"/v1/connectors/{cid}"
    for scope in ("organization", "workspace", "user"):
        made = await conn_client.post(
            f"{base}/{scope}/credentials",
            json={"name": "k", "credentials": {"bearer_token": f"{scope}-1"}},
        )
        assert made.status_code == 200, made.text
        patched = await conn_client.patch(
            f"/v1/connectors/scoped/{scope}/credentials",
            json={"name": "k", "title": "Key", "credentials": {"bearer_token": f"{scope}-2"}},
        )
        assert patched.status_code == 200, patched.text
        [listed] = (await conn_client.get(f"{base}/{scope}/credentials")).json()["credentials"]
        assert listed["title"] == "Key" and listed["authentication_type"] == "bearer"
    seen = await conn_client.post(f"{base}/tools/headers/call", json={})
    assert "user-2" in seen.json()["content"][0]["text"]  # the most specific level's, replaced
    gone = await conn_client.delete(f"{base}/organization/credentials/k")
    assert gone.status_code == 200
    assert (await conn_client.get(f"{base}/organization/credentials")).json()["credentials"] == []
    missing = await conn_client.delete(f"{base}/organization/credentials/k")
    assert missing.status_code == 404 and missing.json()["code"] == "credentials_not_found"

    creds = {"name": "k", "credentials": {"bearer_token": "t"}}
    for method, path, body in (
        ("POST", f"{base}/team/credentials", creds),
        ("PATCH", f"{base}/org/credentials", creds),
        ("DELETE", f"{base}/team/credentials/k", None),
        ("POST", f"{base}/team/activate", None),
        ("POST", f"{base}/team/deactivate", None),
    ):
        r = await conn_client.request(method, path, json=body)
        assert r.status_code == 422, (method, path, r.text)
        assert "consumer_scope" in r.text
    for method, body in (("POST", creds), ("PATCH", creds), ("GET", None)):
        r = await conn_client.request(method, "/v1/connectors/nope/user/credentials", json=body)
        assert r.status_code == 404 and r.json()["code"] == "connector_not_found"
    r = await conn_client.post("/v1/connectors/nope/workspace/activate")
    assert r.status_code == 404
    for invalid in (
        {"name": "has space", "credentials": {"bearer_token": "t"}},
        {"name": "x", "credentials": {"oauth": {"client_id": "c", "client_secret": "s"}}},
        {"name": "x", "credentials": {"headers": {"X-Bad": "a\nb"}}},
    ):
        r = await conn_client.post(f"{base}/workspace/credentials", json=invalid)
        assert r.status_code == 422, (invalid, r.text)
        if "oauth" in invalid["credentials"]:
            assert "client_credentials grant" in r.text
    async with conn_app.state.services.db.transaction() as work:
        stored = (await work.session.execute(select(ConnectorCredential.name))).scalars()
        assert sorted(stored) == ["k", "k"]  # the workspace's and the user's, nothing more

    other = await create_tenant(conn_app.state.services.db)
    async with make_client(conn_app, other.key) as stranger:
        for method, path in (
            ("POST", f"{base}/workspace/credentials"),
            ("PATCH", f"{base}/user/credentials"),
            ("GET", f"{base}/user/credentials"),
            ("DELETE", f"{base}/user/credentials/k"),
            ("POST", f"{base}/user/activate"),
        ):
            r = await stranger.request(method, path, json=creds if method != "GET" else None)
            assert r.status_code == 404, (method, path)

    off = await conn_client.post(f"{base}/workspace/deactivate")
    assert off.status_code == 200
    fetched = (await conn_client.get(base)).json()
    assert fetched["active"] is False and fetched["blocked_by"] == ["workspace"]
    assert (await conn_client.post(f"{base}/workspace/activate")).status_code == 200
    assert (await conn_client.get(base)).json()["blocked_by"] == []


async def test_sharing_with_the_organization(
    conn_app: FastAPI, conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    # The bootstrap key's user is an organization admin.
    mine = await _create(conn_client, url, "mine")
    assert mine["visibility"] == "private"
    share = f"/v1/connectors/{mine['id']}/organization/share"
    async with conn_app.state.services.db.transaction() as work:
        tenancy = TenancyRepository(work.session)
        home = await tenancy.default_workspace()
        assert home is not None
        ws = await tenancy.create_workspace(home.organization_id, "second", is_default=False)
        _, key = await KeyRepository(work.session).create_key(
            kind="standard",
            organization_id=home.organization_id,
            workspace_id=ws.id,
            user_id=None,
            name="second",
        )
    async with make_client(conn_app, key) as neighbour:
        assert (await neighbour.put(share)).status_code == 404  # private: not its to see
        creds = {"name": "n", "credentials": {"bearer_token": "t"}}
        mine_creds = await conn_client.post("/v1/connectors/mine/user/credentials", json=creds)
        assert mine_creds.status_code == 200

        shared = await conn_client.put(share)
        assert shared.status_code == 200 and shared.json()["message"]
        seen = await neighbour.get(f"/v1/connectors/{mine['id']}")
        assert seen.status_code == 200
        assert seen.json()["visibility"] == "shared_org" and seen.json()["owner_type"] == "org"
        put = await neighbour.post("/v1/connectors/mine/workspace/credentials", json=creds)
        assert put.status_code == 200, put.text
        again = await conn_client.put(share)
        assert again.status_code == 409 and again.json()["code"] == "connector_already_shared"
        # Not the creator: refused.
        assert (await neighbour.delete(share)).status_code == 403
        # The workspace's unshare is not the organization's.
        wrong = await conn_client.delete(f"/v1/connectors/{mine['id']}/share")
        assert wrong.status_code == 409 and wrong.json()["code"] == "connector_not_shared"

        back = await conn_client.delete(share)
        assert back.status_code == 200, back.text
        assert (await neighbour.get(f"/v1/connectors/{mine['id']}")).status_code == 404
        assert (await conn_client.get("/v1/connectors/mine")).json()["visibility"] == "private"
        async with conn_app.state.services.db.transaction() as work:
            kept = (await work.session.execute(select(ConnectorCredential.scope))).scalars()
            assert list(kept) == ["user"]  # the creator's own; the other workspace's are gone
        assert (await conn_client.delete(share)).status_code == 409

    workspace_one = await _create(conn_client, url, "ws-one", visibility="shared_workspace")
    refused = await conn_client.put(f"/v1/connectors/{workspace_one['id']}/organization/share")
    assert refused.status_code == 409
    assert (await conn_client.put("/v1/connectors/nope/organization/share")).status_code == 404
    contributor = await member_key(
        conn_app, "c@example.com", workspace_roles=["workspace_contributor"]
    )
    async with make_client(conn_app, contributor) as member:
        theirs = await _create(member, url, "theirs")
        no_admin = await member.put(f"/v1/connectors/{theirs['id']}/organization/share")
        assert no_admin.status_code == 403 and "organization admin" in no_admin.json()["message"]
        # The workspace share is theirs to give and take back.
        assert (await member.put(f"/v1/connectors/{theirs['id']}/share")).status_code == 200
        assert (await member.delete(f"/v1/connectors/{theirs['id']}/share")).status_code == 200
    other = await create_tenant(conn_app.state.services.db)
    async with make_client(conn_app, other.key) as stranger:
        for method in ("PUT", "DELETE"):
            r = await stranger.request(method, share)
            assert r.status_code == 404 and r.json()["code"] == "connector_not_found"
