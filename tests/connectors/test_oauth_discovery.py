"""OAuth2 discovery for connectors: explicit metadata, a metadata URL, RFC 9728 (the 401
challenge, well-known URLs) then RFC 8414, and the documents and addresses it refuses."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

import pytest
from starlette.responses import Response

from maestrale.connectors.oauth import (
    DiscoveryFailed,
    server_metadata,
)
from maestrale.core.fetch import UrlNotAllowed
from tests.connectors.oauth_support import (
    T,
    assert_hidden,
    discover,
    meta,
)
from tests.support.live import free_port
from tests.support.oauth_server import (
    OAuthServer,
    serve_oauth,
)
from tests.support.protected_mcp import BearerProtected, initialize_status, serve_protected_mcp

# -- Discovery ---------------------------------------------------------------------------------


async def test_explicit_metadata_is_validated(auth: OAuthServer) -> None:
    assert await meta(auth) == auth.metadata()
    cases: list[tuple[dict[str, Any], type[Exception]]] = [
        ({"token_endpoint": None}, DiscoveryFailed),
        ({"issuer": ""}, DiscoveryFailed),
        ({"authorization_endpoint": "javascript:alert(1)"}, UrlNotAllowed),
        ({"registration_endpoint": ["x"]}, DiscoveryFailed),
        ({"code_challenge_methods_supported": ["plain"]}, DiscoveryFailed),
        ({"response_types_supported": ["token"]}, DiscoveryFailed),
    ]
    for change, error in cases:
        with pytest.raises(error) as caught:
            await meta(auth, **change)
        assert caught.value.status_code == 400  # type: ignore[attr-defined]
    public = {
        "issuer": "https://as.example.com",
        "authorization_endpoint": "https://as.example.com/authorize",
        "token_endpoint": "https://as.example.com/token",
    }
    found = await server_metadata(
        "", metadata=public, metadata_url=None, allow_private=False, timeout=T
    )
    assert found == public
    for name in ("token_endpoint", "registration_endpoint"):
        with pytest.raises(UrlNotAllowed):
            await server_metadata(
                "",
                metadata={**public, name: "http://10.1.2.3/x"},
                metadata_url=None,
                allow_private=False,
                timeout=T,
            )


async def test_metadata_url(auth: OAuthServer, mcp: tuple[str, BearerProtected]) -> None:
    url = f"{auth.base_url}/.well-known/oauth-authorization-server"
    assert await discover("", url) == auth.metadata()
    # A protected resource metadata document is followed to its authorization server.
    origin = mcp[0].rsplit("/", 1)[0]
    found = await discover(mcp[0], f"{origin}/.well-known/oauth-protected-resource")
    assert (found["issuer"], found["resource"]) == (auth.issuer, mcp[0])
    with pytest.raises(DiscoveryFailed) as caught:
        await discover("", f"{auth.base_url}/nothing-here?key=sekrit")
    assert caught.value.code == "oauth_discovery_failed"
    assert_hidden(caught.value, "sekrit")


async def test_discovery_from_the_401_challenge(
    auth: OAuthServer, mcp: tuple[str, BearerProtected]
) -> None:
    url, _guard = mcp
    status, challenge_header = await initialize_status(url, None)
    assert status == 401 and "resource_metadata=" in challenge_header
    found = await discover(url)
    assert found == {**auth.metadata(), "resource": url, "resource_scope": "tools:read tools:call"}


async def test_discovery_from_well_known_urls(auth: OAuthServer) -> None:
    """No resource_metadata in the challenge: the path-aware well-known URL, then the root;
    an issuer with a path and OpenID Connect discovery only."""
    with (
        serve_oauth(path="/tenants/a", metadata_at="openid") as tenant,
        serve_protected_mcp(tenant, advertise=False) as (url, _guard, _probe),
    ):
        found = await discover(url)
        assert found["issuer"] == tenant.issuer and tenant.issuer.endswith("/tenants/a")
        assert found["token_endpoint"] == f"{tenant.issuer}/token"
        assert found["resource"] == url


async def test_discovery_falls_back_to_the_servers_own_origin(auth: OAuthServer) -> None:
    """A server with no RFC 9728 metadata is its own authorization server (MCP 2025-03-26)."""
    found = await discover(f"{auth.base_url}/mcp")
    assert found == auth.metadata()  # no "resource": none was published


async def test_discovery_refuses_bad_documents(hostile: tuple[str, dict[str, Any]]) -> None:
    base, docs = hostile
    prm = "/.well-known/oauth-protected-resource"
    asm = "/.well-known/oauth-authorization-server"
    good = {
        "issuer": base,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
    }
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "no protected resource metadata"),
        ({asm: [good]}, "no protected resource metadata"),  # a list, not an object
        ({asm: Response(b"{" * 10, media_type="application/json")}, "no protected resource"),
        ({asm: {**good, "padding": "x" * 300_000}}, "no protected resource"),  # too large
        ({asm: {**good, "issuer": "https://evil.example"}}, "names the issuer"),
        ({prm: {"resource": f"{base}/mcp", "authorization_servers": "x"}}, "names no author"),
        (
            {prm: {"resource": "https://bank.example/mcp", "authorization_servers": [base]}},
            "not for",
        ),
        ({prm: {"resource": f"{base}/mcpx", "authorization_servers": [base]}}, "not for"),
        ({prm: {"resource": f"{base}/mcp", "authorization_servers": [base]}}, "could not find"),
    ]
    for served, message in cases:
        docs.clear()
        docs.update(served)
        with pytest.raises(DiscoveryFailed, match=message):
            await discover(f"{base}/mcp")
    docs.clear()
    docs[prm] = {"resource": base, "authorization_servers": [base], "scopes_supported": [1]}
    docs[asm] = good
    docs["/mcp"] = Response(
        status_code=401, headers={"WWW-Authenticate": 'Basic realm="x", Bearer scope="a b"'}
    )
    found = await discover(f"{base}/mcp")  # a resource covers the paths below it
    assert (found["resource"], found["resource_scope"]) == (base, "a b")
    docs.clear()


async def test_discovery_refuses_private_addresses(mcp: tuple[str, BearerProtected]) -> None:
    url = mcp[0]
    port = urlsplit(url).port
    for server, metadata_url in [
        (url, None),
        (f"http://localhost:{port}/mcp", None),  # a name: refused when connecting
        ("https://mcp.example.com/mcp", f"http://localhost:{port}/.well-known/x"),
        ("file:///etc/passwd", None),
    ]:
        with pytest.raises(UrlNotAllowed) as caught:
            await server_metadata(
                server, metadata=None, metadata_url=metadata_url, allow_private=False, timeout=T
            )
        assert caught.value.status_code == 400


async def test_discovery_of_an_unreachable_or_slow_server(
    hostile: tuple[str, dict[str, Any]],
) -> None:
    with pytest.raises(DiscoveryFailed, match="could not be reached"):
        await discover(f"http://127.0.0.1:{free_port()}/mcp")
    base, docs = hostile
    docs["/mcp"] = "slow"
    started = time.monotonic()
    with pytest.raises(DiscoveryFailed, match="did not answer within"):
        await server_metadata(
            f"{base}/mcp", metadata=None, metadata_url=None, allow_private=True, timeout=0.5
        )
    assert time.monotonic() - started < 5  # well under the 10 s the server takes
    docs.clear()
