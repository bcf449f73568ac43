"""Helpers of the OAuth2 tests (their servers are fixtures of tests/connectors/conftest.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from maestrale.connectors.oauth import (
    Tokens,
    authorization_url,
    challenge,
    exchange_code,
    new_verifier,
    open_state,
    seal_state,
    server_metadata,
)
from maestrale.core.crypto import SecretBox
from tests.support.oauth_server import (
    OAuthServer,
    approve_in_browser,
)

REDIRECT = "http://127.0.0.1:9/connectors/oauth2/callback"  # never contacted: the test reads it
T = 5.0  # timeout of every OAuth call
# The test servers are on loopback: every call allows private addresses unless it says otherwise.
LOCAL: dict[str, Any] = {"allow_private": True, "timeout": T}


async def meta(auth: OAuthServer, **changes: Any) -> dict[str, Any]:
    metadata = {**auth.metadata(), **changes}
    found = await server_metadata("", metadata=metadata, metadata_url=None, **LOCAL)
    return found


async def approve(url: str, *, decision: str = "approve") -> dict[str, str]:
    """The query of the callback the approval page redirects to."""
    location = await approve_in_browser(url, decision=decision)
    assert location.startswith(REDIRECT + "?")
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


async def sign_in(
    auth: OAuthServer, box: SecretBox, client: dict[str, Any], metadata: dict[str, Any]
) -> Tokens:
    """The whole flow as the connectors service runs it, from auth URL to tokens."""
    verifier = new_verifier()
    state = seal_state(box, {"connector": "c1", "verifier": verifier}, 600)
    url = authorization_url(
        metadata,
        client_id=client["client_id"],
        redirect_uri=REDIRECT,
        state=state,
        code_challenge=challenge(verifier),
        scope=metadata.get("resource_scope"),
        resource=metadata.get("resource"),
    )
    callback = await approve(url)
    assert callback["iss"] == auth.issuer
    payload = open_state(box, callback["state"])
    return await exchange_code(
        metadata,
        client,
        code=callback["code"],
        verifier=payload["verifier"],
        redirect_uri=REDIRECT,
        resource=metadata.get("resource"),
        **LOCAL,
    )


def assert_hidden(exc: BaseException, *secrets: str | None) -> None:
    text = f"{exc} {exc!r}"
    for secret in secrets:
        assert not secret or secret not in text


async def discover(server: str, metadata_url: str | None = None) -> dict[str, Any]:
    return await server_metadata(server, metadata=None, metadata_url=metadata_url, **LOCAL)
