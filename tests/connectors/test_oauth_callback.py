"""The OAuth2 redirect of connectors (issue 30): it completes only in the browser that started
the flow, a `state` is good once, and the browser goes back only to an allowed origin.

A "browser" here is an httpx client on the in-process app that keeps cookies, as a browser
does; the authorization server is the tests' real one (tests/support/oauth_server.py)."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from mistralai.client import Mistral
from mistralai.client.errors import SDKError

from maestrale.connectors.authorization import check_return_url
from maestrale.core.errors import BadRequest
from tests.connectors.test_connectors_oauth import _local, start_in
from tests.support.app_fixtures import make_client
from tests.support.oauth_server import approve_in_browser, serve_oauth
from tests.support.protected_mcp import serve_protected_mcp

pytestmark = pytest.mark.both_databases("maestrale.connectors.repository")


async def credentials(client: httpx.AsyncClient) -> list[object]:
    listed = (await client.get("/v1/connectors/locked/user/credentials")).json()
    return list(listed["credentials"])


async def auth_url(client: httpx.AsyncClient, **params: str) -> httpx.Response:
    return await client.get("/v1/connectors/locked/auth_url", params=params)


async def locked(client: httpx.AsyncClient, url: str) -> None:
    created = await client.post(
        "/v1/connectors", json={"name": "locked", "description": "d", "server": url}
    )
    assert created.status_code == 201, created.text


async def test_an_attackers_state_in_a_victims_browser_stores_nothing(
    conn_app: FastAPI, conn_client: httpx.AsyncClient
) -> None:
    """The attacker opens its own link (its browser holds the cookie), then gets a victim to
    approve the authorization server's page it was sent to: the victim's browser brings the
    attacker's state and the victim's code, and no verifier."""
    with serve_oauth() as auth, serve_protected_mcp(auth) as (url, _, _):
        await locked(conn_client, url)
        authorize = await start_in(conn_client, (await auth_url(conn_client)).json()["auth_url"])
        back = await approve_in_browser(authorize)  # the victim approves
        async with make_client(conn_app, None) as victim:
            answer = await victim.get(_local(back))
        assert answer.status_code == 400, answer.text
        assert answer.json()["code"] == "oauth_state_not_bound"
        assert auth.store.codes_redeemed == 0
        assert await credentials(conn_client) == []


async def test_a_state_is_good_once(conn_client: httpx.AsyncClient) -> None:
    """A state sent back again, with its browser's cookie and a new code for it, is refused
    before the code is redeemed."""
    with serve_oauth() as auth, serve_protected_mcp(auth) as (url, _, _):
        await locked(conn_client, url)
        authorize = await start_in(conn_client, (await auth_url(conn_client)).json()["auth_url"])
        cookies = dict(conn_client.cookies.items())
        first = await conn_client.get(_local(await approve_in_browser(authorize)))
        assert first.status_code == 200, first.text
        assert not conn_client.cookies.items()  # the flow's cookie is cleared
        again = _local(await approve_in_browser(authorize))  # a new code for the same state
        conn_client.cookies.update(cookies)  # a copy of the cookie, kept by an attacker
        replayed = await conn_client.get(again)
        assert replayed.status_code == 400, replayed.text
        assert replayed.json()["code"] == "oauth_state_used"
        assert auth.store.codes_redeemed == 1
        assert len(await credentials(conn_client)) == 1
        # A new flow replaces the credentials it started from.
        fresh = await start_in(conn_client, (await auth_url(conn_client)).json()["auth_url"])
        renewed = await conn_client.get(_local(await approve_in_browser(fresh)))
        assert renewed.status_code == 200, renewed.text
        assert auth.store.codes_redeemed == 2
        assert len(await credentials(conn_client)) == 1


async def test_the_browser_goes_back_only_to_an_allowed_origin(
    conn_client: httpx.AsyncClient, sdk: Mistral
) -> None:
    """Through the official SDK: its `get_auth_url` is the start of the flow, as it was."""
    with serve_oauth() as auth, serve_protected_mcp(auth) as (url, _, _):
        await locked(conn_client, url)
        with pytest.raises(SDKError) as refused:
            await sdk.beta.connectors.get_auth_url_async(
                connector_id_or_name="locked", app_return_url="https://evil.example/after"
            )
        assert refused.value.status_code == 400
        assert '"param":"app_return_url"' in refused.value.body.replace(" ", "")
        own = await sdk.beta.connectors.get_auth_url_async(
            connector_id_or_name="locked", app_return_url="http://test/console/#connectors"
        )
        assert own.ttl > 0
        back = await approve_in_browser(await start_in(conn_client, own.auth_url))
        done = await conn_client.get(_local(back))
        assert done.status_code == 302
        assert done.headers["location"].startswith("http://test/console/?connector=locked")


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://app.example/done", True),
        ("https://app.example:443/done?x=1", True),
        ("http://test:80/console", True),  # the server's own origin
        ("https://app.example:8443/done", False),
        ("http://app.example/done", False),
        ("https://app.example@evil.example/", False),
        ("https://evil.example/?https://app.example", False),
        ("javascript:alert(1)", False),
        ("//evil.example/", False),
    ],
)
def test_return_origins(url: str, allowed: bool) -> None:
    configured = ("https://app.example",)
    if allowed:
        check_return_url(url, "http://test", configured)
    else:
        with pytest.raises(BadRequest):
            check_return_url(url, "http://test", configured)
