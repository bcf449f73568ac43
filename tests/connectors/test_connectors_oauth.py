"""A connector to an MCP server that wants OAuth2 bearer tokens, end to end: discovery (RFC 9728
then RFC 8414), dynamic client registration, the authorization URL, a user's approval, the
redirect to Maestrale, the tokens stored sealed, tools reached with them, and a refresh once the
short-lived access token expires. Tokens never show in responses or logs."""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.connectors.tables import ConnectorCredential
from tests.support.oauth_server import approve_in_browser, serve_oauth
from tests.support.protected_mcp import serve_protected_mcp


def _local(url: str) -> str:
    """The path and query of a redirect to this app (served in process as http://test)."""
    parts = urlsplit(url)
    assert parts.netloc == "test", url
    return f"{parts.path}?{parts.query}"


async def start_in(browser: httpx.AsyncClient, auth_url: str) -> str:
    """Open a connector's `auth_url` in `browser` (a client that keeps cookies): the
    authorization server's URL it is sent on to."""
    started = await browser.get(_local(auth_url))
    assert started.status_code == 302, started.text
    return started.headers["location"]


async def test_oauth2_flow_stores_sealed_tokens_and_refreshes_them(
    conn_app: FastAPI, conn_client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with serve_oauth(access_ttl=2) as auth, serve_protected_mcp(auth) as (url, guard, _):
        created = await conn_client.post(
            "/v1/connectors", json={"name": "locked", "description": "d", "server": url}
        )
        assert created.status_code == 201, created.text
        body = created.json()
        assert body["tools"] is None and body["is_authenticated"] is False
        assert "oauth2" in {m["method_type"] for m in body["supported_auth_methods"]}
        refused = await conn_client.post("/v1/connectors/locked/tools/echo/call", json={})
        assert refused.status_code == 502 and refused.json()["code"] == "connector_unauthorized"

        got = await conn_client.get(
            "/v1/connectors/locked/auth_url",
            params={"credentials_name": "main", "credentials_title": "Main account"},
        )
        assert got.status_code == 200, got.text
        auth_url, ttl = got.json()["auth_url"], got.json()["ttl"]
        assert ttl > 0 and auth_url.startswith("http://test/v1/connectors/oauth2/start?")
        authorize = await start_in(conn_client, auth_url)
        assert authorize.startswith(auth.issuer)
        query = parse_qs(urlsplit(authorize).query)
        assert query["code_challenge_method"] == ["S256"] and query["redirect_uri"] == [
            "http://test/v1/connectors/oauth2/callback"
        ]
        assert auth.store.registrations == 1  # no client was given: registered dynamically

        back = await approve_in_browser(authorize)
        tampered = _local(back).replace("state=", "state=x")
        assert (await conn_client.get(tampered)).status_code == 400
        done = await conn_client.get(_local(back))
        assert done.status_code == 200 and "authorized" in done.text
        assert auth.store.codes_redeemed == 1

        described = (await conn_client.get("/v1/connectors/locked")).json()
        assert described["is_authenticated"] is True
        assert "echo" in {t["name"] for t in described["tools"]}
        (cred,) = described["connection_credentials"]
        assert cred["name"] == "main" and cred["authentication_type"] == "oauth2"
        assert cred["title"] == "Main account"  # 3.x's credentials_title

        # The access token lives 2 s, under the refresh margin: every use refreshes it first.
        before = auth.store.refreshes
        for text in ("one", "two"):
            called = await conn_client.post(
                "/v1/connectors/locked/tools/echo/call", json={"arguments": {"text": text}}
            )
            assert called.status_code == 200, called.text
            assert called.json()["content"][0]["text"] == text
        assert auth.store.refreshes >= before + 1

        # A token the server stops accepting early is refreshed on its 401, and the call sent
        # again.
        auth.store.expire_access_tokens()
        again = await conn_client.post(
            "/v1/connectors/locked/tools/echo/call", json={"arguments": {"text": "three"}}
        )
        assert again.status_code == 200 and again.json()["content"][0]["text"] == "three"
        assert guard.accepted >= 3

        async with conn_app.state.services.db.transaction() as work:
            (row,) = (await work.session.execute(select(ConnectorCredential))).scalars().all()
        tokens = [t for t in auth.store._access] + [t for t in auth.store._refresh]

        # Once the refresh token is dead too, the call says the server refused the credentials
        # and the credentials say why.
        auth.store.revoke_refresh_tokens()
        auth.store.expire_access_tokens()
        dead = await conn_client.post("/v1/connectors/locked/tools/echo/call", json={})
        assert dead.status_code == 502 and dead.json()["code"] == "connector_unauthorized"
        listed = (await conn_client.get("/v1/connectors/locked/user/credentials")).json()
        status = listed["credentials"][0]["status"]
        assert status["status_type"] == "invalid"
        assert status["error_message"] == "oauth refresh error"
        assert tokens and all(t not in row.sealed for t in tokens)
        logged = caplog.text + str(described)
        assert all(t not in logged for t in tokens)


async def test_a_denied_authorization_stores_nothing(
    conn_app: FastAPI, conn_client: httpx.AsyncClient
) -> None:
    with serve_oauth() as auth, serve_protected_mcp(auth) as (url, _, _):
        await conn_client.post(
            "/v1/connectors", json={"name": "denied", "description": "d", "server": url}
        )
        auth_url = (await conn_client.get("/v1/connectors/denied/auth_url")).json()["auth_url"]
        back = await approve_in_browser(await start_in(conn_client, auth_url), decision="deny")
        answer = await conn_client.get(_local(back))
        assert answer.status_code == 400 and answer.json()["code"] == "oauth_denied"
        listed = (await conn_client.get("/v1/connectors/denied/user/credentials")).json()
        assert listed["credentials"] == []
        assert auth.store.codes_redeemed == 0
