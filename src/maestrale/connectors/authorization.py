"""The OAuth2 authorization-code flow of a connector (with PKCE): the authorization URL, and the
redirect endpoint that exchanges the code and stores the tokens, sealed, as the caller's
credentials.

The flow is bound to the browser that runs it. The `auth_url` given to the caller is a link to
this server (`START_PATH`, a sealed flow), which sends the browser on to the authorization
server with a sealed `state` and leaves it a cookie (HttpOnly, for the callback's path only)
that holds the PKCE verifier. The redirect needs no key, but it needs that cookie: an attacker's
`state` arriving with a victim's browser (and code) finds no verifier and stores nothing, and a
victim's code replayed with an attacker's state and cookie fails PKCE at the authorization
server. A `state` is good once (the credentials it writes must be at the version they had when
the flow began), and the browser goes back only to an allowed origin (`app_return_url`)."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from maestrale.connectors.credentials import OAUTH_CLIENT, oauth_client
from maestrale.connectors.errors import CredentialsMoved
from maestrale.connectors.keychain import Keychain
from maestrale.connectors.oauth.client import (
    authorization_url,
    exchange_code,
    register_client,
)
from maestrale.connectors.oauth.discovery import server_metadata
from maestrale.connectors.oauth.pkce import challenge, new_verifier
from maestrale.connectors.oauth.state import InvalidState, open_state, seal_state
from maestrale.connectors.tools import ConnectorTools
from maestrale.core.auth.principal import Tenant
from maestrale.core.crypto import SecretBox, SecretUnreadable
from maestrale.core.errors import BadRequest
from maestrale.core.uow import Release

STATE_TTL = 600
CALLBACK_PATH = "/v1/connectors/oauth2/callback"
START_PATH = "/v1/connectors/oauth2/start"
# The cookie of one flow is this prefix and the flow's id: a browser may run several at once.
COOKIE_PREFIX = "maestrale_oauth_"
_FLOW = "connector-oauth-flow"  # the sealed start link (never taken for a state)
_BROWSER = "connector-oauth-browser"  # the cookie


class NoAuthorizationUrl(BadRequest):
    code = "no_authorization_url"


class NotThisBrowser(BadRequest):
    """The callback came without the cookie of the flow its `state` names."""

    code = "oauth_state_not_bound"


def redirect_uri(base_url: str) -> str:
    return base_url.rstrip("/") + CALLBACK_PATH


def _origin(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    default = {"http": 80, "https": 443}[parts.scheme]
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


def check_return_url(url: str, base_url: str, allowed: tuple[str, ...]) -> None:
    """Refuse (400) an `app_return_url` outside this server's own origin and the configured
    ones: the callback would otherwise send a browser anywhere (an open redirect)."""
    origin = _origin(url)
    origins = {_origin(base_url), *(_origin(o) for o in allowed)} - {None}
    if origin is None or "@" in urlsplit(url).netloc or origin not in origins:
        raise BadRequest(
            "app_return_url must be on this server's origin or on one of the origins set in "
            "MAESTRALE_CONNECTOR_OAUTH_RETURN_ORIGINS",
            param="app_return_url",
        )


def begin(box: SecretBox, flow: str) -> tuple[str, str, str]:
    """The start link's work, in the browser that opens it: the authorization server's URL
    (with a fresh `state` and PKCE challenge), and the cookie (name, value) that binds the
    flow to this browser."""
    payload = open_state(box, flow, purpose=_FLOW)
    authorize = payload.pop("authorize")
    flow_id = secrets.token_urlsafe(12)
    verifier = new_verifier()
    state = seal_state(box, {**payload, "flow": flow_id}, STATE_TTL)
    url = authorization_url(
        {"authorization_endpoint": authorize["endpoint"]},
        client_id=authorize["client_id"],
        redirect_uri=payload["redirect_uri"],
        state=state,
        code_challenge=challenge(verifier),
        scope=authorize["scope"],
        resource=authorize["resource"],
    )
    cookie = box.seal_json({"flow": flow_id, "verifier": verifier}, _BROWSER)
    return url, COOKIE_PREFIX + flow_id, cookie


def _verifier(box: SecretBox, payload: Mapping[str, Any], cookies: Mapping[str, str]) -> str:
    flow_id = payload.get("flow")
    sealed = cookies.get(COOKIE_PREFIX + str(flow_id)) if isinstance(flow_id, str) else None
    if sealed is None:
        raise NotThisBrowser(
            "this authorization was not started in this browser (or its cookie has expired); "
            "start the sign-in again from the link you were given"
        )
    try:
        bound = box.open_json(sealed, _BROWSER)
    except (SecretUnreadable, ValueError):
        bound = None
    if not isinstance(bound, dict) or bound.get("flow") != flow_id:
        raise InvalidState("the authorization state is not valid; start the sign-in again")
    return str(bound["verifier"])


class ConnectorAuthorization:
    def __init__(self, keychain: Keychain, release: Release) -> None:
        self.keychain = keychain
        self.release = release

    async def auth_url(
        self,
        id_or_name: str,
        *,
        base_url: str,
        credentials_name: str | None,
        app_return_url: str | None,
        method_type: str | None,
        credentials_title: str | None = None,
    ) -> dict[str, Any]:
        if method_type not in (None, "oauth2"):
            raise NoAuthorizationUrl(
                f"{method_type} credentials have no authorization URL: set them with the "
                "credentials endpoints",
                param="method_type",
            )
        keychain = self.keychain
        service, tenant = keychain.connectors, keychain.tenant
        if app_return_url:
            check_return_url(app_return_url, base_url, service.settings.return_origins)
        row = await service.row(id_or_name)
        metadata, client = row.oauth_metadata, oauth_client(service.box, row)
        server, metadata_url, name = row.server, row.oauth_metadata_url, row.name
        callback = redirect_uri(base_url)
        settings = service.settings
        await self.release()
        if metadata is None:
            metadata = await server_metadata(
                server,
                metadata=None,
                metadata_url=metadata_url,
                allow_private=settings.allow_private,
                timeout=settings.tool_timeout,
            )
        if client is None:
            if not metadata.get("registration_endpoint"):
                raise NoAuthorizationUrl(
                    f"connector {name!r} has no OAuth2 client and its authorization server "
                    "offers no dynamic registration: update the connector with auth_data "
                    "(client_id, client_secret)"
                )
            client = await register_client(
                metadata,
                redirect_uri=callback,
                client_name=f"Maestrale connector {name}",
                allow_private=settings.allow_private,
                timeout=settings.tool_timeout,
            )
        stored = await service.row(row.id)
        stored.oauth_metadata = metadata
        stored.oauth_client_sealed = service.box.seal_json(client, OAUTH_CLIENT)
        await service.session.flush()
        scope = "user" if tenant.user_id else "workspace"
        name = credentials_name or "default"
        endpoint = metadata.get("authorization_endpoint")
        if not isinstance(endpoint, str) or urlsplit(endpoint).scheme not in ("http", "https"):
            raise BadRequest(
                "the authorization server metadata has no valid authorization_endpoint",
                code="oauth_failed",
            )
        flow = seal_state(
            service.box,
            {
                "connector": row.id,
                "organization": tenant.organization_id,
                "workspace": tenant.workspace_id,
                "user": tenant.user_id,
                "scope": scope,
                "name": name,
                "title": credentials_title,
                # The credentials' version now: the callback writes over this one only, so that
                # a state is good once.
                "version": await keychain.credential_version(row.id, scope, name),
                "redirect_uri": callback,
                "return": app_return_url,
                "authorize": {
                    "endpoint": endpoint,
                    "client_id": str(client["client_id"]),
                    "scope": " ".join(client.get("client_scopes") or [])
                    or metadata.get("resource_scope"),
                    "resource": metadata.get("resource"),
                },
            },
            STATE_TTL,
            purpose=_FLOW,
        )
        url = f"{base_url.rstrip('/')}{START_PATH}?{urlencode({'flow': flow})}"
        return {"auth_url": url, "ttl": STATE_TTL}


async def complete(
    box: SecretBox,
    make_keychain: Callable[[Tenant], Keychain],
    release: Release,
    *,
    state: str,
    code: str | None,
    error: str | None,
    cookies: Mapping[str, str],
    base_url: str,
) -> tuple[str, str | None]:
    """Finish a flow the authorization server redirected back, in the browser that started it
    (`cookies`): exchange the code, store the tokens as the credentials the flow was started
    for (once), and fetch the connector's tools with them. Returns the connector's name and
    where to send the browser (its app, or None)."""
    payload = open_state(box, state)
    verifier = _verifier(box, payload, cookies)
    tenant = Tenant(payload["organization"], payload["workspace"], payload.get("user"))
    keychain = make_keychain(tenant)
    service = keychain.connectors
    row = await service.row(payload["connector"])
    back = payload.get("return")
    if back:
        check_return_url(back, base_url, service.settings.return_origins)
    version = int(payload["version"])
    if await keychain.credential_version(row.id, payload["scope"], payload["name"]) != version:
        raise CredentialsMoved(
            "this authorization was completed already, or the credentials changed since it "
            "started; start the sign-in again"
        )
    if error or not code:
        raise BadRequest(
            f"the authorization server did not authorize connector {row.name!r}: "
            f"{(error or 'no code')[:200]}",
            code="oauth_denied",
        )
    metadata, client = row.oauth_metadata, oauth_client(box, row)
    if metadata is None or client is None:
        raise BadRequest("the connector's OAuth2 configuration changed; start again")
    await release()
    tokens = await exchange_code(
        metadata,
        client,
        code=code,
        verifier=verifier,
        redirect_uri=payload["redirect_uri"],
        resource=metadata.get("resource"),
        allow_private=service.settings.allow_private,
        timeout=service.settings.tool_timeout,
    )
    await keychain.store_credentials(
        row.id,
        payload["scope"],
        payload["name"],
        {"oauth": tokens.as_json()},
        tokens.expires_at,
        title=payload.get("title"),
        expected_version=version,
    )
    tools = ConnectorTools(keychain, release)
    await tools.refresh(await service.row(row.id), payload["name"])
    return row.name, _returned(back, row.name) if back else None


def _returned(url: str, connector: str) -> str:
    parts = urlsplit(url)
    query = "&".join(
        p for p in (parts.query, urlencode({"connector": connector, "status": "ok"})) if p
    )
    return urlunsplit(parts._replace(query=query))
