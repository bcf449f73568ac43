"""The client side of OAuth2 for connectors: dynamic client registration (RFC 7591), the
authorization URL (authorization code with PKCE, RFC 7636, and resource indicators, RFC 8707),
and the token endpoint (code exchange and refresh, RFC 6749).

Every request goes through the SSRF-guarded client. Error messages name the endpoint and what
the server said, never a token, a code, a verifier or a client secret: they reach API responses
and logs.
"""

from __future__ import annotations

import asyncio
import base64
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, quote_plus, urlencode, urlsplit, urlunsplit

import httpx2
import orjson

from maestrale.connectors.http import check_url, guarded_client, refusal_of
from maestrale.connectors.oauth.tokens import Tokens
from maestrale.core.errors import AppError, BadRequest, UpstreamError
from maestrale.core.fetch import UrlNotAllowed

__all__ = [
    "OAuthError",
    "OAuthUnavailable",
    "Tokens",
    "authorization_url",
    "exchange_code",
    "refresh_tokens",
    "register_client",
]

# Metadata, registrations and token responses are small; a server that sends more is not one.
MAX_BODY = 256 * 1024
# Anything longer than this from a server is cut before it goes into an error message.
_MAX_TEXT = 200
# expires_in beyond ten years is nonsense; capping it keeps datetime arithmetic in range.
_MAX_EXPIRES_IN = 10 * 365 * 24 * 3600


class OAuthError(BadRequest):
    """An OAuth2 step failed because of what a server or the caller sent (400)."""

    code = "oauth_failed"

    def __init__(self, message: str, *, oauth_error: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        # The RFC 6749 `error` code the server answered, e.g. "invalid_grant" on a refresh
        # token that was revoked: the caller then needs the user to sign in again.
        self.oauth_error = oauth_error


class OAuthUnavailable(UpstreamError):
    """The authorization server is down, too slow, or answered a server error (502)."""

    code = "oauth_unavailable"


@dataclass(frozen=True, slots=True)
class Reply:
    """A response reduced to what the OAuth steps look at: status, headers, JSON body (None
    when the body is not JSON, too large, or not read)."""

    status: int
    headers: httpx2.Headers
    body: Any


async def request_json(
    http: httpx2.AsyncClient,
    method: str,
    url: str,
    *,
    allow_private: bool,
    timeout: float,
    what: str,
    unreachable: Callable[[str], AppError],
    read_body: bool = True,
    **kwargs: Any,
) -> Reply:
    """`method url` through the guarded client `http`: UrlNotAllowed when the guard refuses the
    address, `unreachable(message)` when the server cannot be reached or is too slow (the whole
    exchange is bounded by `timeout`, not each read, so a trickling server cannot hold a
    request open)."""
    check_url(url, allow_private=allow_private)
    host = urlsplit(url).netloc.rpartition("@")[2]  # user info may hold a password
    try:
        async with asyncio.timeout(timeout):
            async with http.stream(method, url, **kwargs) as response:
                body = await _json_body(response) if read_body else None
                return Reply(response.status_code, response.headers, body)
    except TimeoutError:
        raise unreachable(f"the {what} at {host} did not answer within {timeout:g} s") from None
    except httpx2.InvalidURL as exc:
        raise UrlNotAllowed(f"the {what} URL is not valid: {_clean(str(exc))}") from exc
    except httpx2.HTTPError as exc:
        refusal = refusal_of(exc)
        if refusal is not None:
            raise UrlNotAllowed(f"the {what}: {refusal}") from exc
        raise unreachable(
            f"the {what} at {host} could not be reached ({type(exc).__name__})"
        ) from exc


async def _json_body(response: httpx2.Response) -> Any:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        return None
    chunks: list[bytes] = []
    received = 0
    async for chunk in response.aiter_bytes():
        received += len(chunk)
        if received > MAX_BODY:
            return None
        chunks.append(chunk)
    try:
        return orjson.loads(b"".join(chunks))
    except orjson.JSONDecodeError:
        return None


def endpoint(metadata: Mapping[str, Any], name: str, *, allow_private: bool) -> str:
    """`metadata[name]` as a URL that passes the SSRF guard's static check."""
    url = metadata.get(name)
    if not isinstance(url, str) or not url:
        raise OAuthError(f"the authorization server metadata has no {name}")
    check_url(url, allow_private=allow_private)
    return url


def _clean(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Server-supplied text fit for an error message: the secrets we sent redacted (a server may
    echo them back), control characters dropped, cut short."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    text = re.sub(r"[\x00-\x1f\x7f]", " ", text)
    return text[:_MAX_TEXT]


def _oauth_error(body: Any, secrets: Iterable[str | None]) -> tuple[str | None, str]:
    """The RFC 6749 §5.2 `error` and a readable description from an error body."""
    if not isinstance(body, dict):
        return None, ""
    code = body.get("error")
    code = code if isinstance(code, str) and re.fullmatch(r"[\w.\-]{1,64}", code) else None
    description = body.get("error_description")
    text = f": {_clean(description, secrets)}" if isinstance(description, str) else ""
    return code, text


# -- Dynamic client registration ---------------------------------------------------------------


def _registration_auth_method(metadata: Mapping[str, Any]) -> str:
    """The client authentication to ask for: a confidential client when the server takes one
    (a secret the server checks is worth having), else a public client."""
    supported = metadata.get("token_endpoint_auth_methods_supported")
    if not isinstance(supported, list):
        return "client_secret_basic"  # RFC 8414 §2: the default when the server says nothing
    for method in ("client_secret_basic", "client_secret_post", "none"):
        if method in supported:
            return method
    raise OAuthError(
        "the authorization server supports none of the client authentication methods "
        "Maestrale uses (client_secret_basic, client_secret_post, none)"
    )


async def register_client(
    metadata: Mapping[str, Any],
    *,
    redirect_uri: str,
    client_name: str,
    allow_private: bool,
    timeout: float,
) -> dict[str, Any]:
    """Register Maestrale as a client of the authorization server (RFC 7591): `{"client_id",
    "client_secret" (None for a public client), "token_endpoint_auth_method"}`."""
    if not metadata.get("registration_endpoint"):
        raise OAuthError(
            "the authorization server does not offer dynamic client registration; "
            "configure a client id for this connector"
        )
    url = endpoint(metadata, "registration_endpoint", allow_private=allow_private)
    method = _registration_auth_method(metadata)
    request = {
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
    }
    async with guarded_client(allow_private=allow_private, timeout=timeout) as http:
        reply = await request_json(
            http,
            "POST",
            url,
            allow_private=allow_private,
            timeout=timeout,
            what="client registration endpoint",
            unreachable=OAuthUnavailable,
            json=request,
            headers={"Accept": "application/json"},
        )
    if reply.status >= 500:
        raise OAuthUnavailable(f"the client registration endpoint answered {reply.status}")
    body = reply.body
    if reply.status not in (200, 201) or not isinstance(body, dict):
        code, text = _oauth_error(body, ())
        raise OAuthError(
            f"the authorization server refused the client registration "
            f"({reply.status}{', ' + code if code else ''}){text}",
            oauth_error=code,
        )
    client_id = body.get("client_id")
    secret = body.get("client_secret")
    if not isinstance(client_id, str) or not client_id:
        raise OAuthError("the client registration response has no client_id")
    if secret is not None and not isinstance(secret, str):
        raise OAuthError("the client registration response has an invalid client_secret")
    granted = body.get("token_endpoint_auth_method")
    return {
        "client_id": client_id,
        "client_secret": secret or None,
        "token_endpoint_auth_method": granted if isinstance(granted, str) else method,
    }


# -- Authorization request ---------------------------------------------------------------------


def authorization_url(
    metadata: Mapping[str, Any],
    *,
    client_id: str,
    redirect_uri: str,
    state: str,
    code_challenge: str,
    scope: str | None,
    resource: str | None,
) -> str:
    """The URL to send the user to: an authorization code request with an S256 PKCE challenge
    (RFC 7636) and, when known, the resource the token is for (RFC 8707). The endpoint's own
    query parameters are kept unless they collide with the request's."""
    base = metadata.get("authorization_endpoint")
    if not isinstance(base, str) or urlsplit(base).scheme not in ("http", "https"):
        raise OAuthError("the authorization server metadata has no valid authorization_endpoint")
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": code_challenge,
        "code_challenge_method": "S256",
    }
    if scope:
        params["scope"] = scope
    if resource:
        params["resource"] = resource
    parts = urlsplit(base)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in params]
    return urlunsplit(parts._replace(query=urlencode([*kept, *params.items()]), fragment=""))


# -- Token endpoint ----------------------------------------------------------------------------


def _client_auth(
    metadata: Mapping[str, Any], client: Mapping[str, Any], form: dict[str, str]
) -> dict[str, str]:
    """Authenticate the client to the token endpoint (RFC 6749 §2.3): fills `form` and returns
    the headers. HTTP Basic when the server accepts it and there is a secret, the secret in the
    form otherwise, the client id alone for a public client."""
    client_id = client.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise OAuthError("the connector has no OAuth2 client id")
    secret = client.get("client_secret")
    if not secret:
        form["client_id"] = client_id
        return {}
    supported = metadata.get("token_endpoint_auth_methods_supported")
    supported = supported if isinstance(supported, list) else ["client_secret_basic"]
    registered = client.get("token_endpoint_auth_method")
    if registered in ("client_secret_basic", "client_secret_post"):
        supported = [registered]
    if "client_secret_basic" in supported:
        # §2.3.1: each part is form-urlencoded before it is joined and base64-encoded.
        pair = f"{quote_plus(client_id)}:{quote_plus(str(secret))}".encode()
        return {"Authorization": f"Basic {base64.b64encode(pair).decode('ascii')}"}
    form["client_id"] = client_id
    form["client_secret"] = str(secret)
    return {}


async def _token_request(
    metadata: Mapping[str, Any],
    client: Mapping[str, Any],
    form: dict[str, str],
    *,
    what: str,
    allow_private: bool,
    timeout: float,
) -> dict[str, Any]:
    url = endpoint(metadata, "token_endpoint", allow_private=allow_private)
    headers = {"Accept": "application/json", **_client_auth(metadata, client, form)}
    secret_fields = ("code", "code_verifier", "refresh_token", "client_secret")
    secrets = [form.get(name) for name in secret_fields] + [client.get("client_secret")]
    async with guarded_client(allow_private=allow_private, timeout=timeout) as http:
        reply = await request_json(
            http,
            "POST",
            url,
            allow_private=allow_private,
            timeout=timeout,
            what="token endpoint",
            unreachable=OAuthUnavailable,
            data=form,
            headers=headers,
        )
    if reply.status >= 500 or reply.status == 429:
        raise OAuthUnavailable(f"the token endpoint answered {reply.status}")
    body = reply.body
    # Some servers (GitHub) answer errors with a 200.
    if reply.status != 200 or not isinstance(body, dict) or "error" in body:
        code, text = _oauth_error(body, secrets)
        raise OAuthError(
            f"the authorization server refused the {what} "
            f"({reply.status}{', ' + code if code else ''}){text}",
            oauth_error=code,
        )
    return body


def _parse_tokens(
    body: Mapping[str, Any], *, refresh_token: str | None, scope: str | None
) -> Tokens:
    """A successful token response (RFC 6749 §5.1), checked; `refresh_token` and `scope` stand
    when the response leaves them out (no rotation; the scope granted is the one asked)."""
    access = body.get("access_token")
    if not isinstance(access, str) or not access:
        raise OAuthError("the token response has no access_token")
    kind = body.get("token_type", "Bearer")
    if not isinstance(kind, str) or kind.lower() != "bearer":
        raise OAuthError("the token response is not a Bearer token, which is all Maestrale uses")
    expires_in = body.get("expires_in")
    if isinstance(expires_in, str) and expires_in.isdigit():
        expires_in = int(expires_in)  # a few providers send a string
    if expires_in is not None and (
        isinstance(expires_in, bool) or not isinstance(expires_in, int) or expires_in < 0
    ):
        raise OAuthError("the token response has an invalid expires_in")
    expires_at = (
        None
        if expires_in is None
        else datetime.now(UTC) + timedelta(seconds=min(expires_in, _MAX_EXPIRES_IN))
    )
    new_refresh = body.get("refresh_token")
    if new_refresh is not None and (not isinstance(new_refresh, str) or not new_refresh):
        raise OAuthError("the token response has an invalid refresh_token")
    granted = body.get("scope")
    if granted is not None and not isinstance(granted, str):
        raise OAuthError("the token response has an invalid scope")
    return Tokens(
        access_token=access,
        token_type="Bearer",
        refresh_token=new_refresh or refresh_token,
        expires_at=expires_at,
        scope=granted if granted is not None else scope,
    )


async def exchange_code(
    metadata: Mapping[str, Any],
    client: Mapping[str, Any],
    *,
    code: str,
    verifier: str,
    redirect_uri: str,
    resource: str | None,
    allow_private: bool,
    timeout: float,
) -> Tokens:
    """Trade the authorization code the callback received for tokens (RFC 6749 §4.1.3), proving
    possession of the PKCE verifier."""
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": redirect_uri,
    }
    if resource:
        form["resource"] = resource
    body = await _token_request(
        metadata,
        client,
        form,
        what="authorization code",
        allow_private=allow_private,
        timeout=timeout,
    )
    return _parse_tokens(body, refresh_token=None, scope=None)


async def refresh_tokens(
    metadata: Mapping[str, Any],
    client: Mapping[str, Any],
    *,
    refresh_token: str,
    resource: str | None,
    scope: str | None,
    allow_private: bool,
    timeout: float,
) -> Tokens:
    """New tokens from a refresh token (RFC 6749 §6). The old refresh token is kept when the
    server does not rotate it. An `oauth_error` of "invalid_grant" on the error means the
    refresh token is dead: the user has to authorize again."""
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    if scope:
        form["scope"] = scope
    if resource:
        form["resource"] = resource
    body = await _token_request(
        metadata,
        client,
        form,
        what="refresh token",
        allow_private=allow_private,
        timeout=timeout,
    )
    return _parse_tokens(body, refresh_token=refresh_token, scope=scope)
