"""A small OAuth2 authorization server for the connector tests, served for real (uvicorn on a
free port of a background thread, `tests.support.mcp_servers.serve_asgi`).

It does what the connector client relies on, strictly: RFC 8414 metadata (at the RFC 8414 or
the OpenID Connect well-known URL, with an optional issuer path), dynamic client registration
(RFC 7591), the authorization code flow with PKCE S256 only (an HTML approval page a test
drives with a plain HTTP client), single-use codes bound to client, redirect URI and
challenge, refresh tokens (rotated unless told not to), client authentication by HTTP Basic,
form post or none. Access tokens are random and short-lived; `TokenStore.valid` is what a
protected resource asks (see `tests.support.protected_mcp`).

    with serve_oauth(access_ttl=2) as auth:
        auth.issuer, auth.store.valid(token), auth.store.expire_access_tokens()
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import re
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote_plus, urlencode

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.support.mcp_servers import serve_asgi

AuthMethod = Literal["client_secret_basic", "client_secret_post", "none"]
ALL_AUTH_METHODS: tuple[AuthMethod, ...] = ("client_secret_basic", "client_secret_post", "none")
CODE_TTL = 60.0
REFRESH_TTL = 30 * 24 * 3600.0


@dataclass
class Client:
    client_id: str
    secret: str | None
    redirect_uris: list[str]
    auth_method: AuthMethod
    name: str = "test client"


@dataclass
class _Grant:
    """What a code or a refresh token stands for."""

    client_id: str
    scope: str | None
    resource: str | None
    expires: float
    redirect_uri: str = ""
    challenge: str = ""


@dataclass
class TokenStore:
    """The server's memory. The servers that read it (a protected resource) run on other
    threads, hence the lock; the counters are what the tests assert on."""

    access_ttl: float
    rotate_refresh: bool = True
    clients: dict[str, Client] = field(default_factory=dict)
    codes_issued: int = 0
    codes_redeemed: int = 0
    refreshes: int = 0
    registrations: int = 0
    # The client authentication method of each token request, in order.
    auth_methods_used: list[str] = field(default_factory=list)
    # The form of the last token request, client secret left out.
    last_token_request: dict[str, str] = field(default_factory=dict)
    # When set, /token answers this status and nothing else (an outage).
    token_endpoint_status: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _codes: dict[str, _Grant] = field(default_factory=dict)
    _access: dict[str, _Grant] = field(default_factory=dict)
    _refresh: dict[str, _Grant] = field(default_factory=dict)

    def valid(self, access_token: str, resource: str | None = None) -> bool:
        """Whether `access_token` is live (and, when `resource` is given, issued for it or for
        no resource in particular)."""
        with self._lock:
            grant = self._access.get(access_token)
        if grant is None or grant.expires <= time.monotonic():
            return False
        return resource is None or grant.resource in (None, resource)

    def expire_access_tokens(self) -> None:
        """Make every access token issued so far expired, as time would."""
        with self._lock:
            for grant in self._access.values():
                grant.expires = 0.0

    def revoke_refresh_tokens(self) -> None:
        with self._lock:
            self._refresh.clear()

    def add_client(
        self,
        redirect_uris: list[str],
        auth_method: AuthMethod = "client_secret_basic",
        name: str = "test client",
    ) -> Client:
        """Register a client (what an administrator would do by hand)."""
        secret = None if auth_method == "none" else secrets.token_urlsafe(24)
        client = Client(secrets.token_urlsafe(12), secret, redirect_uris, auth_method, name)
        with self._lock:
            self.clients[client.client_id] = client
        return client

    def issue_code(self, grant: _Grant) -> str:
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._codes[code] = grant
            self.codes_issued += 1
        return code

    def redeem_code(self, code: str) -> _Grant | None:
        """The code's grant, once: a code is gone after its first use (RFC 6749 §4.1.2)."""
        with self._lock:
            grant = self._codes.pop(code, None)
        return grant if grant is not None and grant.expires > time.monotonic() else None

    def take_refresh(self, token: str) -> _Grant | None:
        """The refresh token's grant; the token is spent when refresh tokens rotate."""
        with self._lock:
            grant = (self._refresh.pop if self.rotate_refresh else self._refresh.get)(token, None)
        return grant if grant is not None and grant.expires > time.monotonic() else None

    def issue_tokens(self, grant: _Grant, *, with_refresh: bool) -> dict[str, Any]:
        """A token response for `grant`."""
        access = secrets.token_urlsafe(32)
        now = time.monotonic()
        body: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": max(1, round(self.access_ttl)),
        }
        with self._lock:
            self._access[access] = _Grant(
                grant.client_id, grant.scope, grant.resource, now + self.access_ttl
            )
            if with_refresh:
                refresh = secrets.token_urlsafe(32)
                self._refresh[refresh] = _Grant(
                    grant.client_id, grant.scope, grant.resource, now + REFRESH_TTL
                )
                body["refresh_token"] = refresh
        if grant.scope:
            body["scope"] = grant.scope
        return body


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def _token_error(error: str, description: str, status: int = 400) -> JSONResponse:
    headers = {"Cache-Control": "no-store"}
    if error == "invalid_client":
        headers["WWW-Authenticate"] = 'Basic realm="test"'
    return JSONResponse(
        {"error": error, "error_description": description}, status_code=status, headers=headers
    )


def _with_query(url: str, params: dict[str, str]) -> str:
    return f"{url}{'&' if '?' in url else '?'}{urlencode(params)}"


class OAuthServer:
    """The authorization server's app and store; `issuer` is known once it is served."""

    def __init__(
        self,
        *,
        access_ttl: float = 2.0,
        path: str = "",
        metadata_at: Literal["oauth", "openid"] = "oauth",
        auth_methods: tuple[AuthMethod, ...] = ALL_AUTH_METHODS,
        registration: bool = True,
        rotate_refresh: bool = True,
    ) -> None:
        self.store = TokenStore(access_ttl=access_ttl, rotate_refresh=rotate_refresh)
        self.path = path.rstrip("/")
        self.auth_methods = auth_methods
        self.registration = registration
        self.base_url = ""
        well_known = {"oauth": "oauth-authorization-server", "openid": "openid-configuration"}
        p = self.path
        self.app = Starlette(
            routes=[
                Route(f"/.well-known/{well_known[metadata_at]}{p}", self.metadata_route),
                Route(f"{p}/authorize", self.authorize_page, methods=["GET"]),
                Route(f"{p}/authorize", self.authorize_decision, methods=["POST"]),
                Route(f"{p}/token", self.token, methods=["POST"]),
                Route(f"{p}/register", self.register, methods=["POST"]),
            ]
        )

    @property
    def issuer(self) -> str:
        return f"{self.base_url}{self.path}"

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 metadata this server publishes."""
        doc: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(self.auth_methods),
            "scopes_supported": ["tools:read", "tools:call"],
        }
        if self.registration:
            doc["registration_endpoint"] = f"{self.issuer}/register"
        return doc

    async def metadata_route(self, request: Request) -> Response:
        return JSONResponse(self.metadata())

    def _request_error(self, params: dict[str, str]) -> str | None:
        """Why an authorization request is refused outright (no redirect: the redirect URI
        itself is not trusted), or None."""
        client = self.store.clients.get(params.get("client_id", ""))
        if client is None:
            return "unknown client_id"
        if params.get("redirect_uri") not in client.redirect_uris:
            return "redirect_uri is not registered for this client"
        return None

    def _flow_error(self, params: dict[str, str]) -> str | None:
        """Why a request from a known client to a registered redirect URI is refused."""
        if params.get("response_type") != "code":
            return "unsupported_response_type"
        challenge = params.get("code_challenge", "")
        if params.get("code_challenge_method") != "S256" or not 43 <= len(challenge) <= 128:
            return "invalid_request"
        return None

    async def authorize_page(self, request: Request) -> Response:
        params = dict(request.query_params)
        refused = self._request_error(params)
        if refused:
            return HTMLResponse(f"<p>{html.escape(refused)}</p>", status_code=400)
        error = self._flow_error(params)
        if error:
            query = {"error": error, "state": params.get("state", "")}
            return RedirectResponse(_with_query(params["redirect_uri"], query), status_code=302)
        fields = "".join(
            f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
            for k, v in params.items()
        )
        client = self.store.clients[params["client_id"]]
        return HTMLResponse(
            f"<!doctype html><title>Authorize</title>"
            f"<p>Allow {html.escape(client.name)} to use your tools?</p>"
            f'<form method="post" action="{self.path}/authorize">{fields}'
            '<button name="decision" value="approve">Approve</button>'
            '<button name="decision" value="deny">Deny</button></form>'
        )

    async def authorize_decision(self, request: Request) -> Response:
        params = dict(parse_qsl((await request.body()).decode(), keep_blank_values=True))
        refused = self._request_error(params)
        if refused:
            return HTMLResponse(f"<p>{html.escape(refused)}</p>", status_code=400)
        error = self._flow_error(params)
        state = params.get("state", "")
        if error is None and params.get("decision") != "approve":
            error = "access_denied"
        if error:
            query = {"error": error, "state": state}
            return RedirectResponse(_with_query(params["redirect_uri"], query), status_code=302)
        code = self.store.issue_code(
            _Grant(
                client_id=params["client_id"],
                scope=params.get("scope") or None,
                resource=params.get("resource") or None,
                expires=time.monotonic() + CODE_TTL,
                redirect_uri=params["redirect_uri"],
                challenge=params["code_challenge"],
            )
        )
        query = {"code": code, "state": state, "iss": self.issuer}
        return RedirectResponse(_with_query(params["redirect_uri"], query), status_code=302)

    def _authenticate(self, request: Request, form: dict[str, str]) -> Client | None:
        """The client of a token request (RFC 6749 §2.3), or None when it fails to prove it."""
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            try:
                pair = base64.b64decode(header[6:], validate=True).decode()
            except ValueError:
                return None
            client_id, _, secret = (unquote_plus(part) for part in pair.partition(":"))
            method: str = "client_secret_basic"
        elif "client_secret" in form:
            client_id, secret, method = (
                form.get("client_id", ""),
                form["client_secret"],
                "client_secret_post",
            )
        else:
            client_id, secret, method = form.get("client_id", ""), "", "none"
        client = self.store.clients.get(client_id)
        if client is None or method not in self.auth_methods:
            return None
        if client.secret is None:
            ok = method == "none"
        else:
            ok = method != "none" and secrets.compare_digest(secret, client.secret)
        if ok:
            self.store.auth_methods_used.append(method)
        return client if ok else None

    async def token(self, request: Request) -> Response:
        if self.store.token_endpoint_status is not None:
            return Response("unavailable", status_code=self.store.token_endpoint_status)
        form = dict(parse_qsl((await request.body()).decode(), keep_blank_values=True))
        self.store.last_token_request = {k: v for k, v in form.items() if k != "client_secret"}
        client = self._authenticate(request, form)
        if client is None:
            return _token_error("invalid_client", "client authentication failed", 401)
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            return self._code_grant(client, form)
        if grant_type == "refresh_token":
            return self._refresh_grant(client, form)
        return _token_error("unsupported_grant_type", f"grant_type {grant_type!r}")

    def _code_grant(self, client: Client, form: dict[str, str]) -> Response:
        code = form.get("code", "")
        grant = self.store.redeem_code(code)
        if grant is None or grant.client_id != client.client_id:
            # Echoes the code on purpose: the client must not pass it on in its own errors.
            return _token_error("invalid_grant", f"unknown or spent code {code}")
        if form.get("redirect_uri") != grant.redirect_uri:
            return _token_error("invalid_grant", "redirect_uri does not match")
        if s256(form.get("code_verifier", "")) != grant.challenge:
            return _token_error("invalid_grant", "PKCE verification failed")
        if form.get("resource") and form["resource"] != grant.resource:
            return _token_error("invalid_target", "resource does not match")
        self.store.codes_redeemed += 1
        return JSONResponse(
            self.store.issue_tokens(grant, with_refresh=True),
            headers={"Cache-Control": "no-store"},
        )

    def _refresh_grant(self, client: Client, form: dict[str, str]) -> Response:
        grant = self.store.take_refresh(form.get("refresh_token", ""))
        if grant is None or grant.client_id != client.client_id:
            return _token_error("invalid_grant", "unknown, spent or revoked refresh token")
        asked = set(form.get("scope", "").split())
        if asked - set((grant.scope or "").split()):
            return _token_error("invalid_scope", "scope wider than the original grant")
        self.store.refreshes += 1
        body = self.store.issue_tokens(grant, with_refresh=self.store.rotate_refresh)
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    async def register(self, request: Request) -> Response:
        if not self.registration:
            return JSONResponse({"error": "not_found"}, status_code=404)
        try:
            body = await request.json()
        except ValueError:
            body = None
        uris = body.get("redirect_uris") if isinstance(body, dict) else None
        if (
            not isinstance(uris, list)
            or not uris
            or not all(isinstance(u, str) and u.startswith(("http://", "https://")) for u in uris)
        ):
            return _token_error("invalid_redirect_uri", "redirect_uris must be a list of URLs")
        assert isinstance(body, dict)
        method = body.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in self.auth_methods:
            return _token_error("invalid_client_metadata", f"unsupported auth method {method!r}")
        client = self.store.add_client(uris, method, str(body.get("client_name", "client")))
        self.store.registrations += 1
        answer: dict[str, Any] = {
            "client_id": client.client_id,
            "client_id_issued_at": int(time.time()),
            "redirect_uris": uris,
            "token_endpoint_auth_method": method,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "client_name": client.name,
        }
        if client.secret is not None:
            answer |= {"client_secret": client.secret, "client_secret_expires_at": 0}
        return JSONResponse(answer, status_code=201)


async def approve_in_browser(url: str, *, decision: str = "approve", timeout: float = 5) -> str:
    """Follow an authorization URL to the approval page and answer it as a user would; the
    URL the browser is then sent to (the redirect URI with `code` and `state`, or `error`)."""
    async with httpx.AsyncClient(timeout=timeout) as http:
        page = await http.get(url)
        if page.status_code != 200:
            raise AssertionError(f"the authorization page answered {page.status_code}: {page.text}")
        form = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', page.text))
        action = re.search(r'action="([^"]+)"', page.text)
        assert action is not None
        fields = {html.unescape(k): html.unescape(v) for k, v in form.items()}
        answer = await http.post(
            str(page.url.join(action.group(1))), data={**fields, "decision": decision}
        )
    if answer.status_code != 302:
        raise AssertionError(f"the approval answered {answer.status_code}: {answer.text}")
    return answer.headers["location"]


@contextmanager
def serve_documents() -> Iterator[tuple[str, dict[str, Any]]]:
    """A server of canned answers, for hostile and broken servers: a request for a path gets
    `docs[path]` (a JSON-able value, a starlette Response, or "slow": 10 s, then 404), else 404.
    Yields (base URL, docs); the test fills `docs`."""
    docs: dict[str, Any] = {}

    async def answer(request: Request) -> Response:
        doc = docs.get(request.url.path)
        if doc == "slow":
            await asyncio.sleep(10)
        if isinstance(doc, Response):
            return doc
        return JSONResponse(doc) if doc not in (None, "slow") else Response("no", 404)

    app = Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST"])])
    with serve_asgi(app) as base:
        yield base, docs


@contextmanager
def serve_oauth(**options: Any) -> Iterator[OAuthServer]:
    """A fresh authorization server (`OAuthServer` options), served until the block ends."""
    server = OAuthServer(**options)
    with serve_asgi(server.app) as base:
        server.base_url = base
        yield server
