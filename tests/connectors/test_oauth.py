"""OAuth2 for connectors against real servers: PKCE and the sealed state, registration, the
authorization URL, the code flow, refresh, and errors that leak nothing."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from maestrale.connectors.oauth import (
    InvalidState,
    OAuthError,
    OAuthUnavailable,
    Tokens,
    authorization_url,
    challenge,
    exchange_code,
    new_verifier,
    open_state,
    refresh_tokens,
    register_client,
    seal_state,
)
from maestrale.core.crypto import SecretBox
from maestrale.core.fetch import UrlNotAllowed
from tests.connectors.oauth_support import (
    LOCAL,
    REDIRECT,
    T,
    approve,
    assert_hidden,
    discover,
    meta,
    sign_in,
)
from tests.support.live import free_port
from tests.support.oauth_server import (
    OAuthServer,
)
from tests.support.protected_mcp import BearerProtected, initialize_status

# -- PKCE and state ----------------------------------------------------------------------------


def test_pkce_matches_rfc7636_appendix_b() -> None:
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    fresh = {new_verifier() for _ in range(20)}
    assert len(fresh) == 20
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{43,128}", v) for v in fresh)
    for bad in ("short", "x" * 129, "é" * 50, "a b" * 20):
        with pytest.raises(ValueError, match="PKCE"):
            challenge(bad)


def test_state_round_trips_sealed_and_url_safe(box: SecretBox) -> None:
    state = seal_state(box, {"connector": "c1", "verifier": "the-verifier-value"}, 60)
    assert re.fullmatch(r"[A-Za-z0-9._-]+", state)
    assert "the-verifier-value" not in state
    assert open_state(box, state) == {"connector": "c1", "verifier": "the-verifier-value"}
    rotated = SecretBox(b"a new secret", previous=[b"the server secret of this test run"])
    assert open_state(rotated, state)["connector"] == "c1"


@pytest.mark.parametrize(
    "case", ["tampered", "foreign", "expired", "other_purpose", "huge", "garbage"]
)
def test_state_refused(box: SecretBox, case: str) -> None:
    state = seal_state(box, {"connector": "c1"}, 60)
    now = None
    if case == "tampered":
        i = len(state) // 2 + 10
        state = state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1 :]
    elif case == "foreign":
        state = seal_state(SecretBox(b"another server"), {"connector": "c1"}, 60)
    elif case == "expired":
        now = time.time() + 61
    elif case == "other_purpose":
        state = box.seal_json({"exp": time.time() + 60, "payload": {}}, "connector-credentials")
    elif case == "huge":
        state = state + "A" * 10_000
    else:
        state = "v1.nothing.here"
    with pytest.raises(InvalidState) as caught:
        open_state(box, state, now=now)
    assert (caught.value.status_code, caught.value.code) == (400, "invalid_oauth_state")


# -- Registration and the authorization URL ----------------------------------------------------


async def test_dynamic_client_registration(auth: OAuthServer) -> None:
    metadata = await meta(auth)
    before = auth.store.registrations
    client = await register_client(
        metadata, redirect_uri=REDIRECT, client_name="Maestrale", **LOCAL
    )
    assert auth.store.registrations == before + 1
    registered = auth.store.clients[client["client_id"]]
    assert client == {
        "client_id": registered.client_id,
        "client_secret": registered.secret,
        "token_endpoint_auth_method": "client_secret_basic",
    }
    assert registered.redirect_uris == [REDIRECT] and registered.name == "Maestrale"
    public = await register_client(
        {**metadata, "token_endpoint_auth_methods_supported": ["none"]},
        redirect_uri=REDIRECT,
        client_name="Maestrale",
        **LOCAL,
    )
    assert public["client_secret"] is None and public["token_endpoint_auth_method"] == "none"
    without = {k: v for k, v in metadata.items() if k != "registration_endpoint"}
    with pytest.raises(OAuthError, match="dynamic client registration"):
        await register_client(without, redirect_uri=REDIRECT, client_name="M", **LOCAL)
    with pytest.raises(OAuthError, match="invalid_redirect_uri"):
        await register_client(metadata, redirect_uri="ftp://x/cb", client_name="M", **LOCAL)
    with pytest.raises(OAuthError, match="none of the client authentication methods"):
        await register_client(
            {**metadata, "token_endpoint_auth_methods_supported": ["private_key_jwt"]},
            redirect_uri=REDIRECT,
            client_name="M",
            **LOCAL,
        )


def test_authorization_url_carries_the_request() -> None:
    metadata = {"authorization_endpoint": "https://as.example/authorize?tenant=t1&state=old#x"}
    url = authorization_url(
        metadata,
        client_id="cid",
        redirect_uri=REDIRECT,
        state="v1.abc.def",
        code_challenge="E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        scope="tools:read tools:call",
        resource="https://mcp.example/mcp",
    )
    parts = urlsplit(url)
    assert (parts.netloc, parts.path, parts.fragment) == ("as.example", "/authorize", "")
    assert parse_qs(parts.query) == {
        "tenant": ["t1"],
        "response_type": ["code"],
        "client_id": ["cid"],
        "redirect_uri": [REDIRECT],
        "state": ["v1.abc.def"],
        "code_challenge": ["E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"],
        "code_challenge_method": ["S256"],
        "scope": ["tools:read tools:call"],
        "resource": ["https://mcp.example/mcp"],
    }
    with pytest.raises(OAuthError):
        authorization_url({"authorization_endpoint": "javascript:x"}, client_id="c",
                          redirect_uri=REDIRECT, state="s", code_challenge="c", scope=None,
                          resource=None)  # fmt: skip


# -- The code flow, refresh and errors ---------------------------------------------------------


async def test_full_flow_then_refresh_after_expiry(
    auth: OAuthServer, mcp: tuple[str, BearerProtected], box: SecretBox
) -> None:
    url, _guard = mcp
    metadata = await discover(url)
    client = await register_client(
        metadata, redirect_uri=REDIRECT, client_name="Maestrale", **LOCAL
    )
    tokens = await sign_in(auth, box, client, metadata)
    assert auth.store.last_token_request["resource"] == url
    assert tokens.token_type == "Bearer" and tokens.scope == "tools:read tools:call"
    assert tokens.refresh_token and tokens.expires_at is not None
    assert abs(tokens.expires_at - (datetime.now(UTC) + timedelta(seconds=2))) < timedelta(
        seconds=1
    )
    assert auth.store.auth_methods_used[-1] == "client_secret_basic"
    assert await initialize_status(url, tokens.access_token) == (200, "")

    auth.store.expire_access_tokens()
    status, header = await initialize_status(url, tokens.access_token)
    assert status == 401 and 'error="invalid_token"' in header
    refreshes = auth.store.refreshes
    renewed = await refresh_tokens(
        metadata,
        client,
        refresh_token=tokens.refresh_token,
        resource=url,
        scope=tokens.scope,
        **LOCAL,
    )
    assert auth.store.refreshes == refreshes + 1
    assert renewed.refresh_token not in (None, tokens.refresh_token)  # rotated
    assert (await initialize_status(url, renewed.access_token))[0] == 200
    assert (await initialize_status(url, tokens.access_token))[0] == 401
    with pytest.raises(OAuthError) as caught:  # the spent refresh token
        await refresh_tokens(
            metadata, client, refresh_token=tokens.refresh_token, resource=url, scope=None, **LOCAL,
        )  # fmt: skip
    assert caught.value.oauth_error == "invalid_grant"
    assert_hidden(caught.value, tokens.refresh_token, client["client_secret"])


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "none"])
async def test_client_authentication_methods(
    auth: OAuthServer, box: SecretBox, method: Any
) -> None:
    registered = auth.store.add_client([REDIRECT], method)
    client = {"client_id": registered.client_id, "client_secret": registered.secret}
    supported = ["client_secret_post", "none"] if method != "client_secret_basic" else None
    metadata = await meta(auth, token_endpoint_auth_methods_supported=supported)
    tokens = await sign_in(auth, box, client, metadata)
    assert auth.store.valid(tokens.access_token)
    assert auth.store.auth_methods_used[-1] == method
    # The method the registration named wins over the metadata's preference.
    if method == "client_secret_post":
        client["token_endpoint_auth_method"] = method
        tokens = await sign_in(auth, box, client, await meta(auth))
        assert auth.store.auth_methods_used[-1] == method


async def test_refresh_keeps_a_refresh_token_that_is_not_rotated(
    auth: OAuthServer, box: SecretBox
) -> None:
    registered = auth.store.add_client([REDIRECT])
    client = {"client_id": registered.client_id, "client_secret": registered.secret}
    metadata = await meta(auth)
    tokens = await sign_in(auth, box, client, metadata)
    assert tokens.refresh_token is not None
    auth.store.rotate_refresh = False
    try:
        renewed = await refresh_tokens(
            metadata, client, refresh_token=tokens.refresh_token, resource=None, scope=None,
            **LOCAL,
        )  # fmt: skip
    finally:
        auth.store.rotate_refresh = True
    assert renewed.refresh_token == tokens.refresh_token
    assert renewed.access_token != tokens.access_token


async def test_a_denied_authorization_comes_back_with_its_state(auth: OAuthServer) -> None:
    registered = auth.store.add_client([REDIRECT])
    url = authorization_url(
        auth.metadata(), client_id=registered.client_id, redirect_uri=REDIRECT, state="s1",
        code_challenge=challenge(new_verifier()), scope=None, resource=None,
    )  # fmt: skip
    assert await approve(url, decision="deny") == {"error": "access_denied", "state": "s1"}


async def test_bad_codes_are_400s_that_leak_nothing(auth: OAuthServer, box: SecretBox) -> None:
    registered = auth.store.add_client([REDIRECT], "client_secret_post")
    client = {"client_id": registered.client_id, "client_secret": registered.secret}
    metadata = await meta(auth)
    verifier = new_verifier()
    url = authorization_url(
        metadata, client_id=registered.client_id, redirect_uri=REDIRECT, state="s",
        code_challenge=challenge(verifier), scope=None, resource=None,
    )  # fmt: skip
    code = (await approve(url))["code"]

    async def exchange(code: str, verifier: str, **changes: Any) -> Tokens:
        return await exchange_code(
            metadata, {**client, **changes}, code=code, verifier=verifier,
            redirect_uri=REDIRECT, resource=None, **LOCAL,
        )  # fmt: skip

    cases = [
        ("not-a-code-" + verifier[:20], verifier, {}, "invalid_grant"),  # the server echoes it
        (code, new_verifier(), {}, "invalid_grant"),  # wrong verifier: the code is spent too
        (code, verifier, {}, "invalid_grant"),
        ("whatever-code", verifier, {"client_secret": "wrong-secret"}, "invalid_client"),
    ]
    for bad_code, bad_verifier, changes, error in cases:
        with pytest.raises(OAuthError) as caught:
            await exchange(bad_code, bad_verifier, **changes)
        assert (caught.value.status_code, caught.value.code) == (400, "oauth_failed")
        assert caught.value.oauth_error == error
        assert_hidden(caught.value, bad_code, bad_verifier, registered.secret, "wrong-secret")


async def test_token_endpoint_down_is_a_502(
    auth: OAuthServer, hostile: tuple[str, dict[str, Any]]
) -> None:
    registered = auth.store.add_client([REDIRECT])
    client = {"client_id": registered.client_id, "client_secret": registered.secret}
    base, docs = hostile
    docs["/slow-token"] = "slow"
    endpoints = [
        f"http://127.0.0.1:{free_port()}/token",  # nothing listens
        f"{base}/slow-token",
        auth.metadata()["token_endpoint"],  # answers 503, below
    ]
    auth.store.token_endpoint_status = 503
    try:
        for endpoint in endpoints:
            metadata = {**auth.metadata(), "token_endpoint": endpoint}
            with pytest.raises(OAuthUnavailable) as caught:
                await refresh_tokens(
                    metadata, client, refresh_token="refresh-secret-value", resource=None,
                    scope=None, allow_private=True, timeout=0.5,
                )  # fmt: skip
            assert (caught.value.status_code, caught.value.code) == (502, "oauth_unavailable")
            assert_hidden(caught.value, "refresh-secret-value", registered.secret)
    finally:
        auth.store.token_endpoint_status = None
        docs.clear()


async def test_token_endpoint_on_a_private_address_is_refused(auth: OAuthServer) -> None:
    port = urlsplit(auth.base_url).port
    metadata = {**auth.metadata(), "token_endpoint": f"http://localhost:{port}/token"}
    with pytest.raises(UrlNotAllowed):
        await exchange_code(
            metadata, {"client_id": "c", "client_secret": None}, code="c", verifier="v",
            redirect_uri=REDIRECT, resource=None, allow_private=False, timeout=T,
        )  # fmt: skip


async def test_token_responses_are_checked(hostile: tuple[str, dict[str, Any]]) -> None:
    base, docs = hostile
    metadata = {
        "issuer": base,
        "authorization_endpoint": f"{base}/a",
        "token_endpoint": f"{base}/t",
    }
    client = {"client_id": "c", "client_secret": None}
    for body, message in [
        ({"token_type": "Bearer"}, "no access_token"),
        ({"access_token": "a", "token_type": "mac"}, "not a Bearer"),
        ({"access_token": "a", "token_type": "bearer", "expires_in": -1}, "expires_in"),
        ({"access_token": "a", "token_type": "bearer", "expires_in": True}, "expires_in"),
        ({"access_token": "a", "token_type": "bearer", "refresh_token": 5}, "refresh_token"),
        ({"error": "bad_verification_code"}, "bad_verification_code"),  # GitHub's 200 error
        (["a"], "refused"),
    ]:
        docs["/t"] = body
        with pytest.raises(OAuthError, match=message):
            await exchange_code(
                metadata, client, code="c", verifier="v", redirect_uri=REDIRECT, resource=None,
                **LOCAL,
            )  # fmt: skip
    docs["/t"] = {"access_token": "a", "token_type": "bearer", "expires_in": "60"}
    tokens = await refresh_tokens(
        metadata, client, refresh_token="r", resource=None, scope="s", **LOCAL
    )  # fmt: skip
    assert (tokens.refresh_token, tokens.scope, tokens.token_type) == ("r", "s", "Bearer")
    assert tokens.expires_within(61) and not tokens.expires_within(50)
    docs.clear()


def test_tokens_round_trip_and_stay_out_of_repr() -> None:
    tokens = Tokens("access-value", "Bearer", "refresh-value", datetime.now(UTC), "a b")
    assert Tokens.from_json(tokens.as_json()) == tokens
    assert "access-value" not in repr(tokens) and "refresh-value" not in repr(tokens)
    assert Tokens.from_json({**tokens.as_json(), "expires_at": None}).expires_within(1e9) is False
    naive = "2020-01-01T00:00:00"
    for bad in [
        None,
        {},
        {**tokens.as_json(), "scope": 3},
        {**tokens.as_json(), "expires_at": naive},
        {**tokens.as_json(), "expires_at": "yesterday"},
    ]:
        with pytest.raises(ValueError, match="stored tokens"):
            Tokens.from_json(bad)
