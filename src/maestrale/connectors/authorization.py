"""The OAuth2 authorization-code flow of a connector (with PKCE): the authorization URL, and the
redirect endpoint that exchanges the code and stores the tokens, sealed, as the caller's
credentials. The `state` is sealed too (it carries the PKCE verifier and who asked), so the
redirect needs no key: a state that was altered, forged or is older than its TTL is refused."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from maestrale.connectors import credentials as C
from maestrale.connectors.oauth.client import (
    authorization_url,
    exchange_code,
    register_client,
)
from maestrale.connectors.oauth.discovery import server_metadata
from maestrale.connectors.oauth.pkce import challenge, new_verifier
from maestrale.connectors.oauth.state import open_state, seal_state
from maestrale.connectors.service import ConnectorService
from maestrale.connectors.tools import ConnectorTools
from maestrale.core.auth.principal import Tenant
from maestrale.core.crypto import SecretBox
from maestrale.core.errors import BadRequest

STATE_TTL = 600
CALLBACK_PATH = "/v1/connectors/oauth2/callback"
Release = Callable[[], Awaitable[None]]


class NoAuthorizationUrl(BadRequest):
    code = "no_authorization_url"


def redirect_uri(base_url: str) -> str:
    return base_url.rstrip("/") + CALLBACK_PATH


class ConnectorAuthorization:
    def __init__(self, service: ConnectorService, release: Release) -> None:
        self.service = service
        self.release = release

    async def auth_url(
        self,
        id_or_name: str,
        *,
        base_url: str,
        credentials_name: str | None,
        app_return_url: str | None,
        method_type: str | None,
    ) -> dict[str, Any]:
        if method_type not in (None, "oauth2"):
            raise NoAuthorizationUrl(
                f"{method_type} credentials have no authorization URL: set them with the "
                "credentials endpoints",
                param="method_type",
            )
        if app_return_url:
            parts = urlsplit(app_return_url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise BadRequest("app_return_url must be an http(s) URL", param="app_return_url")
        service, tenant = self.service, self.service.tenant
        row = await service.row(id_or_name)
        metadata, client = row.oauth_metadata, C.oauth_client(service.box, row)
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
        stored.oauth_client_sealed = service.box.seal_json(client, C.OAUTH_CLIENT)
        await service.session.flush()
        verifier = new_verifier()
        state = seal_state(
            service.box,
            {
                "connector": row.id,
                "organization": tenant.organization_id,
                "workspace": tenant.workspace_id,
                "user": tenant.user_id,
                "scope": "user" if tenant.user_id else "workspace",
                "name": credentials_name or "default",
                "verifier": verifier,
                "redirect_uri": callback,
                "return": app_return_url,
            },
            STATE_TTL,
        )
        url = authorization_url(
            metadata,
            client_id=str(client["client_id"]),
            redirect_uri=callback,
            state=state,
            code_challenge=challenge(verifier),
            scope=metadata.get("resource_scope"),
            resource=metadata.get("resource"),
        )
        return {"auth_url": url, "ttl": STATE_TTL}


async def complete(
    box: SecretBox,
    make_service: Callable[[Tenant], ConnectorService],
    release: Release,
    *,
    state: str,
    code: str | None,
    error: str | None,
) -> tuple[str, str | None]:
    """Finish a flow the authorization server redirected back: exchange the code, store the
    tokens as the credentials the flow was started for, and fetch the connector's tools with
    them. Returns the connector's name and where to send the browser (its app, or None)."""
    payload = open_state(box, state)
    tenant = Tenant(payload["organization"], payload["workspace"], payload.get("user"))
    service = make_service(tenant)
    row = await service.row(payload["connector"])
    back = payload.get("return")
    if error or not code:
        raise BadRequest(
            f"the authorization server did not authorize connector {row.name!r}: "
            f"{(error or 'no code')[:200]}",
            code="oauth_denied",
        )
    metadata, client = row.oauth_metadata, C.oauth_client(box, row)
    if metadata is None or client is None:
        raise BadRequest("the connector's OAuth2 configuration changed; start again")
    await release()
    tokens = await exchange_code(
        metadata,
        client,
        code=code,
        verifier=payload["verifier"],
        redirect_uri=payload["redirect_uri"],
        resource=metadata.get("resource"),
        allow_private=service.settings.allow_private,
        timeout=service.settings.tool_timeout,
    )
    await service.store_credentials(
        row.id, payload["scope"], payload["name"], {"oauth": tokens.as_json()}, tokens.expires_at
    )
    tools = ConnectorTools(service, release)
    await tools.refresh(await service.row(row.id), payload["name"])
    return row.name, _returned(back, row.name) if back else None


def _returned(url: str, connector: str) -> str:
    parts = urlsplit(url)
    query = "&".join(
        p for p in (parts.query, urlencode({"connector": connector, "status": "ok"})) if p
    )
    return urlunsplit(parts._replace(query=query))
