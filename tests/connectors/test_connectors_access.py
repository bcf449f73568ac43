"""Who sees and may change a connector: tenancy (another organization never sees one), private
connectors (their owner only), sharing (the creator, with the workspace role's permission),
activation at each level, credentials (sealed, never shown), and the SSRF guard."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.app import create_app
from maestrale.connectors.tables import Connector, ConnectorActivation, ConnectorCredential
from maestrale.core.auth.repository import KeyRepository, TenancyRepository
from tests.support import app_fixtures
from tests.support.app_fixtures import create_tenant, make_client, member_key
from tests.support.mcp_servers import ServerProbe

pytestmark = pytest.mark.both_databases("maestrale.connectors.repository")


async def _create(
    client: httpx.AsyncClient, url: str, name: str, **extra: object
) -> dict[str, Any]:
    response = await client.post(
        "/v1/connectors", json={"name": name, "description": "d", "server": url, **extra}
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


async def test_another_organization_never_sees_a_connector(
    conn_app: FastAPI, conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    created = await _create(conn_client, url, "mine", visibility="shared_org")
    other = await create_tenant(conn_app.state.services.db)
    async with make_client(conn_app, other.key) as stranger:
        assert (await stranger.get("/v1/connectors")).json()["items"] == []
        for path in (f"/v1/connectors/{created['id']}", "/v1/connectors/mine"):
            r = await stranger.get(path)
            assert r.status_code == 404 and r.json()["code"] == "connector_not_found"
        call = await stranger.post(
            f"/v1/connectors/{created['id']}/tools/echo/call", json={"arguments": {"text": "x"}}
        )
        assert call.status_code == 404
        assert (await stranger.delete(f"/v1/connectors/{created['id']}")).status_code == 404
        # Its own connector of the same name is its own business.
        assert (await _create(stranger, url, "mine"))["id"] != created["id"]


async def test_private_connectors_and_sharing(
    conn_app: FastAPI, conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    contributor = await member_key(
        conn_app, "c@example.com", workspace_roles=["workspace_contributor"]
    )
    plain = await member_key(conn_app, "u@example.com", workspace_roles=["user"])
    async with make_client(conn_app, contributor) as creator, make_client(conn_app, plain) as peer:
        private = await _create(creator, url, "private-one")
        assert private["visibility"] == "private" and private["private_tool_execution"]
        assert (await peer.get("/v1/connectors/private-one")).status_code == 404
        # Not the creator: refused, even by the workspace's admin key.
        refused = await conn_client.put(f"/v1/connectors/{private['id']}/share")
        assert refused.status_code == 404  # the owner's private connector is invisible to it
        other_private = await _create(peer, url, "peer-one")
        no_permission = await peer.put(f"/v1/connectors/{other_private['id']}/share")
        assert no_permission.status_code == 403
        assert "ShareConnectorToWorkspace" in no_permission.json()["message"]

        shared = await creator.put(f"/v1/connectors/{private['id']}/share")
        assert shared.status_code == 200 and shared.json()["message"]
        seen = (await peer.get("/v1/connectors/private-one")).json()
        assert seen["visibility"] == "shared_workspace" and seen["owner_type"] == "workspace"
        again = await creator.put(f"/v1/connectors/{private['id']}/share")
        assert again.status_code == 409
        # A plain user may use a shared connector, not delete it, nor unshare it.
        assert (await peer.delete(f"/v1/connectors/{private['id']}")).status_code == 403
        assert (await peer.delete(f"/v1/connectors/{private['id']}/share")).status_code == 403


async def test_activation_levels_and_tool_lists(
    conn_app: FastAPI, conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    created = await _create(conn_client, url, "acts", visibility="shared_workspace")
    cid = created["id"]
    assert created["active"] is True
    plain = await member_key(conn_app, "p@example.com", workspace_roles=["user"])
    async with make_client(conn_app, plain) as user:
        refused = await user.post(f"/v1/connectors/{cid}/workspace/deactivate")
        assert refused.status_code == 403
        refused = await user.post(f"/v1/connectors/{cid}/organization/activate", json={})
        assert refused.status_code == 403
        mine = await user.post(f"/v1/connectors/{cid}/user/activate", json={"exclude": ["fail"]})
        assert mine.status_code == 200
        tools = (await user.get(f"/v1/connectors/{cid}/tools")).json()
        assert "fail" not in {t["name"] for t in tools} and "echo" in {t["name"] for t in tools}
        excluded = await user.post(f"/v1/connectors/{cid}/tools/fail/call", json={})
        assert excluded.status_code == 403

        # The workspace's admin (the bootstrap key) switches it off for everyone in it: a
        # user's own activation cannot switch it back on.
        off = await conn_client.post(f"/v1/connectors/{cid}/workspace/deactivate")
        assert off.status_code == 200
        assert (await user.get(f"/v1/connectors/{cid}")).json()["active"] is False
        blocked = await user.post(f"/v1/connectors/{cid}/tools/echo/call", json={})
        assert blocked.status_code == 400 and blocked.json()["code"] == "connector_inactive"
        listed = (await user.get("/v1/connectors", params={"active": "false"})).json()
        assert [c["id"] for c in listed["items"]] == [cid]
        assert (await user.get("/v1/connectors", params={"active": "true"})).json()["items"] == []

    on = await conn_client.post(
        f"/v1/connectors/{cid}/workspace/activate", json={"include": ["echo", "add"]}
    )
    assert on.status_code == 200
    tools = (await conn_client.get(f"/v1/connectors/{cid}/tools")).json()
    assert {t["name"] for t in tools} == {"echo", "add"}
    bad = await conn_client.post(
        f"/v1/connectors/{cid}/workspace/activate", json={"include": ["a"], "exclude": ["b"]}
    )
    assert bad.status_code == 422


async def test_credentials_are_sealed_and_reach_the_server(
    conn_app: FastAPI, conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    secret_header, secret_token = "hdr-5ecret-value", "tok-5ecret-value"
    created = await _create(conn_client, url, "creds", headers={"X-Org-Key": secret_header})
    assert secret_header not in str(created)
    put = await conn_client.post(
        "/v1/connectors/creds/user/credentials",
        json={"name": "mine", "credentials": {"bearer_token": secret_token}},
    )
    assert put.status_code == 200, put.text
    replaced = await conn_client.post(
        "/v1/connectors/creds/user/credentials",
        json={"name": "mine", "title": "Mine", "credentials": {"bearer_token": secret_token}},
    )
    assert replaced.status_code == 200
    bad_name = await conn_client.get(
        "/v1/connectors/creds/auth_url", params={"credentials_name": "no spaces allowed"}
    )
    assert bad_name.status_code == 422
    listed = (await conn_client.get("/v1/connectors/creds/user/credentials")).json()
    assert len(listed["credentials"]) == 1 and listed["credentials"][0]["title"] == "Mine"
    assert listed["credentials"][0]["name"] == "mine"
    assert listed["credentials"][0]["authentication_type"] == "bearer"
    assert listed["credentials"][0]["is_default"] is True
    described = (await conn_client.get("/v1/connectors/creds")).json()
    assert secret_token not in str(described) and secret_header not in str(described)
    assert described["connection_credentials"][0]["name"] == "mine"

    seen = (await conn_client.post("/v1/connectors/creds/tools/headers/call", json={})).json()
    text = seen["content"][0]["text"]
    assert secret_token in text and secret_header in text  # they reached the server

    async with conn_app.state.services.db.transaction() as work:
        rows = (await work.session.execute(select(ConnectorCredential))).scalars().all()
        connector = (await work.session.execute(select(Connector))).scalars().one()
    assert rows and all(secret_token not in r.sealed for r in rows)
    assert connector.headers_sealed and secret_header not in connector.headers_sealed

    missing = await conn_client.delete("/v1/connectors/creds/user/credentials/nope")
    assert missing.status_code == 404
    gone = await conn_client.delete("/v1/connectors/creds/user/credentials/mine")
    assert gone.status_code == 200
    assert (await conn_client.get("/v1/connectors/creds/user/credentials")).json() == {
        "credentials": [],
        "connector_preset_credentials_for_auth": ["none"],
    }


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "169.254.169.254"]
)
async def test_private_servers_are_refused_by_default(
    database_url: str, tmp_path: Path, tools_server: tuple[str, ServerProbe], host: str
) -> None:
    url, _ = tools_server
    port = url.rsplit(":", 1)[1].split("/")[0]
    app = create_app(app_fixtures.test_settings(database_url, tmp_path / "data"))
    async with app.router.lifespan_context(app), make_client(app) as client:
        r = await client.post(
            "/v1/connectors",
            json={"name": "ssrf", "description": "d", "server": f"http://{host}:{port}/mcp"},
        )
        assert r.status_code == 400 and r.json()["code"] == "url_not_allowed", r.text
        assert (await client.get("/v1/connectors")).json()["items"] == []


PUBLIC_SERVER = "https://93.184.216.34/mcp"  # an IP literal: nothing is resolved nor reached
METADATA = {
    "issuer": "https://auth.example.com",
    "authorization_endpoint": "https://auth.example.com/authorize",
    "token_endpoint": "https://auth.example.com/token",
}


@pytest.mark.parametrize(
    "oauth",
    [
        {"oauth2_server_metadata_url": "http://2130706433:8080/.well-known/oauth"},
        {"oauth2_server_metadata_url": "http://localhost:8080/.well-known/oauth"},
        {"oauth2_server_metadata_url": "http://[fec0::1]/.well-known/oauth"},
        {"oauth2_server_metadata": {**METADATA, "token_endpoint": "http://2130706433:9/token"}},
        {"oauth2_server_metadata": {**METADATA, "token_endpoint": "http://localhost:9/token"}},
        {"oauth2_server_metadata": {**METADATA, "registration_endpoint": "http://0x7f.1/reg"}},
        {"oauth2_server_metadata": {**METADATA, "authorization_endpoint": "http://2130706433/"}},
    ],
    ids=lambda o: str(o)[:70],
)
async def test_private_oauth_endpoints_are_refused_at_create(
    database_url: str, tmp_path: Path, oauth: dict[str, Any]
) -> None:
    """The OAuth2 URLs this server will reach are held to the server URL's rule at create
    (resolved, numeric IPv4 forms read as the resolver reads them), not only when used."""
    app = create_app(app_fixtures.test_settings(database_url, tmp_path / "data"))
    async with app.router.lifespan_context(app), make_client(app) as client:
        r = await client.post(
            "/v1/connectors",
            json={"name": "ssrf", "description": "d", "server": PUBLIC_SERVER, **oauth},
        )
        assert r.status_code == 400 and r.json()["code"] == "url_not_allowed", r.text
        assert (await client.get("/v1/connectors")).json()["items"] == []


async def test_organization_wide_connectors_and_another_workspace(
    conn_app: FastAPI, conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    org_wide = await _create(conn_client, url, "everyone", visibility="shared_org")
    local = await _create(conn_client, url, "local", visibility="shared_workspace")
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
        listed = (await neighbour.get("/v1/connectors")).json()["items"]
        assert [c["id"] for c in listed] == [org_wide["id"]]
        assert (await neighbour.get(f"/v1/connectors/{local['id']}")).status_code == 404
    plain = await member_key(conn_app, "m@example.com", workspace_roles=["workspace_admin"])
    async with make_client(conn_app, plain) as member:
        refused = await _post(member, url, "mine-for-all", visibility="shared_org")
        assert refused.status_code == 403


async def _post(client: httpx.AsyncClient, url: str, name: str, **extra: object) -> httpx.Response:
    body = {"name": name, "description": "d", "server": url, **extra}
    return await client.post("/v1/connectors", json=body)


async def test_pages_and_hostile_queries(
    conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    ids = [(await _create(conn_client, url, f"c{i}"))["id"] for i in range(3)]
    first = (await conn_client.get("/v1/connectors", params={"page_size": 2})).json()
    assert [c["id"] for c in first["items"]] == ids[:2]
    cursor = first["pagination"]["next_cursor"]
    assert first["pagination"]["page_size"] == 2 and cursor
    second = (
        await conn_client.get("/v1/connectors", params={"page_size": 2, "cursor": cursor})
    ).json()
    assert [c["id"] for c in second["items"]] == ids[2:]
    assert second["pagination"]["next_cursor"] is None
    for params in (
        {"page_size": 0},
        {"page_size": 10**6},
        {"page_size": 2**70},
        {"cursor": "not-a-cursor"},
        {"cursor": "e30"},  # {} encoded: no position
    ):
        r = await conn_client.get("/v1/connectors", params=params)
        assert r.status_code in (400, 422), (params, r.text)
    for params in ({"page": 0}, {"page": 2**63}, {"page_size": 0}):
        r = await conn_client.get(f"/v1/connectors/{ids[0]}/tools", params=params)
        assert r.status_code in (400, 422), (params, r.text)
    hostile: list[dict[str, Any]] = [
        {"headers": {"X-Bad": "a\r\nInjected: 1"}},
        {"headers": {"bad name": "v"}},
        {"headers": {"X-Obj": {"nested": 1}}},
        {"server": "file:///etc/passwd"},
        {"server": "gopher://example.com/"},
        {"tool_timeout_seconds": 10**9},
        {"description": "x" * 5000},
    ]
    for extra in hostile:
        r = await _post(conn_client, url, "hostile", **extra)
        assert r.status_code in (400, 422), (extra, r.text)
    assert (await conn_client.get("/v1/connectors/hostile")).status_code == 404


async def test_another_replicas_change_applies_within_the_cache_ttl(
    conn_app: FastAPI, conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    """A direct call trusts what it resolved for `connector_cache_ttl`: a deactivation
    written by another replica (straight into the database here, which this process's runtime
    does not see) applies once that has passed; one made here applies at once."""
    url, _ = tools_server
    created = await _create(conn_client, url, "cached", visibility="shared_workspace")
    call = "/v1/connectors/cached/tools/echo/call"
    # 3 s here (1 s by default), so that the second call surely comes within it.
    conn_app.state.services.connectors.cache_ttl = 3.0
    resolved_at = time.monotonic()
    assert (await conn_client.post(call, json={})).status_code == 200
    async with conn_app.state.services.db.transaction() as work:
        ws = await TenancyRepository(work.session).default_workspace()
        assert ws is not None
        work.session.add(
            ConnectorActivation(
                connector_id=created["id"],
                scope="workspace",
                scope_id=ws.id,
                organization_id=ws.organization_id,
                active=False,
                config={},
            )
        )
    assert (await conn_client.post(call, json={})).status_code == 200
    await asyncio.sleep(max(0.0, resolved_at + 3.1 - time.monotonic()))
    refused = await conn_client.post(call, json={})
    assert refused.status_code == 400 and refused.json()["code"] == "connector_inactive"
    on = await conn_client.post(f"/v1/connectors/{created['id']}/workspace/activate", json={})
    assert on.status_code == 200
    assert (await conn_client.post(call, json={})).status_code == 200
