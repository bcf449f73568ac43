"""Where a connector's OAuth2 authorization server is and what it offers (RFC 8414 metadata):
given by the connector, fetched from the URL it names, or discovered from the MCP server as
the MCP authorization spec describes: the server's protected resource metadata (RFC 9728),
found through its 401 challenge or its well-known URLs, names the authorization server, whose
metadata is at its own well-known URLs (RFC 8414, then OpenID Connect discovery).

Every URL fetched passes the SSRF guard; a failure is a 400 that says what was tried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx2

from maestrale.connectors.http import check_url, guarded_client
from maestrale.connectors.oauth.client import OAuthError, request_json

_PRM_PATH = "/.well-known/oauth-protected-resource"
_MAX_SCOPE = 1000
# An MCP `initialize` request: what a client sends first, so a protected server answers it with
# its 401 challenge whatever it routes.
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "maestrale", "version": "1"},
    },
}


class DiscoveryFailed(OAuthError):
    """The authorization server or its metadata could not be found or is not usable."""

    code = "oauth_discovery_failed"


def validate_metadata(
    metadata: Any, *, allow_private: bool, issuer: str | None = None
) -> dict[str, Any]:
    """`metadata` checked as RFC 8414 authorization server metadata that Maestrale can use:
    issuer and the authorization and token endpoints present, every endpoint an http(s) URL the
    SSRF guard allows (UrlNotAllowed otherwise), PKCE S256 and the code flow not excluded, and
    the issuer the one it was fetched for (RFC 8414 §3.3: else a server could pass off another's
    metadata)."""
    if not isinstance(metadata, dict):
        raise DiscoveryFailed("the authorization server metadata is not a JSON object")
    for name in ("issuer", "authorization_endpoint", "token_endpoint"):
        value = metadata.get(name)
        if not isinstance(value, str) or not value:
            raise DiscoveryFailed(f"the authorization server metadata has no {name}")
    if urlsplit(metadata["issuer"]).scheme not in ("http", "https"):
        raise DiscoveryFailed("the authorization server metadata's issuer is not an http(s) URL")
    for name, value in metadata.items():
        if name.endswith("_endpoint"):
            if not isinstance(value, str):
                raise DiscoveryFailed(f"the authorization server metadata's {name} is not a URL")
            check_url(value, allow_private=allow_private)
    methods = metadata.get("code_challenge_methods_supported")
    if isinstance(methods, list) and "S256" not in methods:
        raise DiscoveryFailed("the authorization server does not support PKCE with S256")
    responses = metadata.get("response_types_supported")
    if isinstance(responses, list) and "code" not in responses:
        raise DiscoveryFailed("the authorization server does not offer the authorization code flow")
    if issuer is not None and metadata["issuer"].rstrip("/") != issuer.rstrip("/"):
        raise DiscoveryFailed(
            f"the authorization server metadata names the issuer {metadata['issuer'][:100]!r}, "
            f"not {issuer[:100]!r} where it was found"
        )
    return dict(metadata)


@dataclass(slots=True)
class _Discovery:
    """One discovery: its guarded client and the URLs it tried (for the error message)."""

    http: httpx2.AsyncClient
    allow_private: bool
    timeout: float
    tried: list[str] = field(default_factory=list)

    async def document(self, url: str, what: str) -> dict[str, Any] | None:
        """The JSON object at `url`, or None when there is none (not found, not JSON)."""
        self.tried.append(_shown(url))
        reply = await request_json(
            self.http,
            "GET",
            url,
            allow_private=self.allow_private,
            timeout=self.timeout,
            what=what,
            unreachable=DiscoveryFailed,
            headers={"Accept": "application/json"},
        )
        return reply.body if reply.status == 200 and isinstance(reply.body, dict) else None

    async def challenge(self, server: str) -> tuple[str | None, str | None]:
        """The `resource_metadata` URL and `scope` of the server's Bearer challenge, if it
        answers an unauthenticated request with one (RFC 9728 §5.1). Headers only: an
        unprotected server may answer with an endless event stream."""
        reply = await request_json(
            self.http,
            "POST",
            server,
            allow_private=self.allow_private,
            timeout=self.timeout,
            what="MCP server",
            unreachable=DiscoveryFailed,
            read_body=False,
            json=_INITIALIZE,
            headers={"Accept": "application/json, text/event-stream"},
        )
        if reply.status not in (401, 403):
            return None, None
        header = reply.headers.get("www-authenticate", "")
        return _auth_param(header, "resource_metadata"), _auth_param(header, "scope")


def _auth_param(header: str, name: str) -> str | None:
    """A parameter of a WWW-Authenticate header (quoted or token form)."""
    match = re.search(rf'(?:^|[\s,]){name}\s*=\s*(?:"([^"]*)"|([^\s,"]+))', header)
    if match is None:
        return None
    value = match.group(1) if match.group(1) is not None else match.group(2)
    return value or None


def _origin(url: str) -> str:
    """Scheme and host of `url`, without any user info (httpx would send it as credentials)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _shown(url: str) -> str:
    """`url` fit for an error message: no user info, query or fragment (they may hold keys)."""
    parts = urlsplit(url)
    return f"{_origin(url)}{parts.path}"[:150]


def _covers(resource: str, server: str) -> bool:
    """Whether the protected resource `resource` is `server` or a parent of it (same origin, a
    path prefix at a segment boundary)."""
    r, s = urlsplit(resource), urlsplit(server)
    if (r.scheme.lower(), r.netloc.lower()) != (s.scheme.lower(), s.netloc.lower()):
        return False
    return (s.path.rstrip("/") + "/").startswith(r.path.rstrip("/") + "/")


def _resource_scope(challenge_scope: str | None, resource: dict[str, Any]) -> str | None:
    """The scope to ask for, in the MCP spec's order: the challenge's, else the resource's."""
    scopes = resource.get("scopes_supported")
    if (
        challenge_scope is None
        and isinstance(scopes, list)
        and all(isinstance(s, str) for s in scopes)
    ):
        challenge_scope = " ".join(scopes)
    if challenge_scope and len(challenge_scope) <= _MAX_SCOPE and challenge_scope.isprintable():
        return challenge_scope
    return None


async def _protected_resource(
    run: _Discovery, server: str
) -> tuple[dict[str, Any] | None, str | None]:
    """The server's RFC 9728 metadata (None when it publishes none) and its challenge scope."""
    metadata_url, scope = await run.challenge(server)
    path = urlsplit(server).path.rstrip("/")
    # RFC 9728 wants an absolute URL; a relative one is read against the server's, not refused.
    candidates = [urljoin(server, metadata_url)] if metadata_url else []
    if path:
        candidates.append(f"{_origin(server)}{_PRM_PATH}{path}")
    candidates.append(f"{_origin(server)}{_PRM_PATH}")
    for url in candidates:
        document = await run.document(url, "protected resource metadata")
        if document is not None and "authorization_servers" in document:
            return document, scope
    return None, scope


async def _from_resource(
    run: _Discovery, resource: dict[str, Any], server: str, scope: str | None
) -> dict[str, Any]:
    """The metadata of the first authorization server `resource` names, with the resource."""
    servers = resource.get("authorization_servers")
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
        raise DiscoveryFailed("the protected resource metadata names no authorization server")
    resource_id = resource.get("resource")
    if not isinstance(resource_id, str) or not _covers(resource_id, server):
        # RFC 9728 §3.3: a server must not obtain tokens meant for another resource.
        raise DiscoveryFailed(
            f"the protected resource metadata is for {str(resource_id)[:100]!r}, "
            f"not for the connector's server"
        )
    metadata = await _authorization_server(run, servers[0])
    if metadata is None:
        raise DiscoveryFailed(
            "could not find the authorization server metadata (RFC 8414) of "
            f"{_shown(servers[0])!r}; tried {', '.join(run.tried)}"
        )
    metadata["resource"] = resource_id
    resource_scope = _resource_scope(scope, resource)
    if resource_scope:
        metadata["resource_scope"] = resource_scope
    return metadata


async def _authorization_server(run: _Discovery, issuer: str) -> dict[str, Any] | None:
    """The RFC 8414 metadata of `issuer` from its well-known URLs (OpenID Connect's last), or
    None when none of them has any."""
    check_url(issuer, allow_private=run.allow_private)
    origin, path = _origin(issuer), urlsplit(issuer).path.rstrip("/")
    candidates = [f"{origin}/.well-known/oauth-authorization-server{path}"]
    if path:
        candidates += [
            f"{origin}/.well-known/openid-configuration{path}",
            f"{origin}{path}/.well-known/openid-configuration",
        ]
    else:
        candidates.append(f"{origin}/.well-known/openid-configuration")
    for url in candidates:
        document = await run.document(url, "authorization server metadata")
        if document is not None and ("issuer" in document or "token_endpoint" in document):
            return validate_metadata(document, allow_private=run.allow_private, issuer=issuer)
    return None


async def server_metadata(
    server: str,
    *,
    metadata: dict[str, Any] | None,
    metadata_url: str | None,
    allow_private: bool,
    timeout: float,
) -> dict[str, Any]:
    """The OAuth2 authorization server metadata (RFC 8414) of the connector whose MCP server is
    at `server`: `metadata` when given, else the document at `metadata_url` (authorization
    server metadata, or protected resource metadata that names the server), else discovered
    from the MCP server (module docstring). A server that publishes no RFC 9728 metadata is
    taken to be its own authorization server, as in the MCP spec of 2025-03-26.

    The result also carries `resource` (the RFC 8707 resource indicator for the authorization
    and token requests) when the server published one, and `resource_scope` (the scope it asks
    for) when known. Raises DiscoveryFailed or UrlNotAllowed (400s)."""
    if metadata is not None:
        return validate_metadata(metadata, allow_private=allow_private)
    async with guarded_client(allow_private=allow_private, timeout=timeout) as http:
        run = _Discovery(http, allow_private, timeout)
        if metadata_url:
            document = await run.document(metadata_url, "authorization server metadata")
            if document is None:
                raise DiscoveryFailed(
                    f"no authorization server metadata (a JSON object) at {_shown(metadata_url)}"
                )
            if "authorization_servers" in document and "token_endpoint" not in document:
                return await _from_resource(run, document, server, None)
            return validate_metadata(document, allow_private=allow_private)
        check_url(server, allow_private=allow_private)
        resource, scope = await _protected_resource(run, server)
        if resource is not None:
            return await _from_resource(run, resource, server, scope)
        found = await _authorization_server(run, _origin(server))
        if found is None:
            raise DiscoveryFailed(
                "could not discover the OAuth2 authorization server of the connector: its "
                "server publishes no protected resource metadata (RFC 9728) and no "
                "authorization server metadata (RFC 8414); give oauth2_server_metadata or "
                f"oauth2_server_metadata_url. Tried {', '.join(run.tried)}"
            )
        return found
