"""The /v1/connectors group (beta): MCP tool servers, their OAuth2 authorization, sharing (with
the workspace or the organization), activation at the organization, workspace and user levels,
and their tools. Their credentials' routes are in `credentials_router`."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Query, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from maestrale.config.dependencies import AppSettings
from maestrale.connectors.authorization import (
    CALLBACK_PATH,
    COOKIE_PREFIX,
    STATE_TTL,
    begin,
    complete,
)
from maestrale.connectors.credentials_router import credentials_router
from maestrale.connectors.dependencies import (
    Authorization,
    Service,
    Tools,
    base_url,
    keychain_factory,
    runtime_of,
)
from maestrale.connectors.schemas import (
    CREDENTIALS_NAME,
    LEVEL_OF,
    AuthType,
    AuthUrlOut,
    CallToolIn,
    ConnectorCreate,
    ConnectorUpdate,
    ConsumerScope,
    MessageOut,
    ToolExecutionConfig,
)
from maestrale.core.disconnect import cancel_on_disconnect
from maestrale.core.errors import error_responses
from maestrale.core.responses import json_bytes
from maestrale.core.routing import Work, domain_router

router = domain_router(prefix="/connectors", tags=["connectors"])

REACHES = error_responses((403, 409, 502, 504))


def _json(value: Any, status_code: int = 200) -> Response:
    return json_bytes(orjson.dumps(value), status_code=status_code)


def _message(text: str) -> MessageOut:
    return MessageOut(message=text)


# First: the hottest route of the group is matched before the others.
@router.post(
    "/{connector_id_or_name}/tools/{tool_name}/call",
    responses={200: {"description": "ConnectorToolCallResponse"}, **REACHES},
)
async def call_tool(
    connector_id_or_name: str,
    tool_name: str,
    request: Request,
    tools: Tools,
    body: CallToolIn | None = None,
    credentials_name: str | None = Query(default=None, max_length=128),
) -> Response:
    """Run one tool of the connector with the caller's credentials. A tool that fails answers
    200 with `metadata.mcp_meta.isError`; a server that cannot be reached, 502 (504 when it
    does not answer in time). A client that goes away cancels the call."""
    arguments = (body.arguments if body is not None else None) or {}
    called = tools.call(connector_id_or_name, tool_name, arguments, credentials_name)
    return _json(await cancel_on_disconnect(request, called))


@router.get("", responses={200: {"description": "PaginatedConnectors"}})
async def list_connectors(
    service: Service,
    cursor: str | None = Query(default=None, max_length=512),
    page_size: int = 100,
    active: bool | None = None,
    supports_mcp: bool | None = None,
) -> Response:
    """The connectors the caller can see (its organization's shared ones, its workspace's and
    its own private ones), oldest first, a cursor page at a time; `active` (2.8) and
    `supports_mcp` (3.x: every connector here is an MCP server) filter them."""
    return _json(await service.list_page(cursor, page_size, active, supports_mcp))


@router.post("", status_code=201, responses={201: {"description": "Connector"}, **REACHES})
async def create_connector(body: ConnectorCreate, service: Service, tools: Tools) -> Response:
    """Create a connector to an MCP server (streamable HTTP or SSE). The server is reached at
    once: its card and tools are cached (a server that needs authorization first is created
    all the same, and reached again once authorized)."""
    row = await service.create(body)
    await tools.refresh(row)
    return _json(await service.describe(await service.row(row.id)), 201)


@router.get("/oauth2/start", include_in_schema=False)
async def oauth_start(request: Request, flow: str = Query(max_length=8192)) -> Response:
    """The `auth_url` of a connector, opened in the user's browser: sends it on to the
    authorization server, and leaves it the cookie that the redirect back must bring (the flow
    is bound to this browser)."""
    url, cookie, value = begin(runtime_of(request).box, flow)
    response = RedirectResponse(url, status_code=302)
    response.set_cookie(
        cookie,
        value,
        max_age=STATE_TTL,
        path=CALLBACK_PATH,
        secure=base_url(request).startswith("https://"),
        httponly=True,
        # Lax: the cookie rides the authorization server's redirect back (a top-level GET).
        samesite="lax",
    )
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/oauth2/callback", include_in_schema=False)
async def oauth_callback(
    request: Request,
    work: Work,
    settings: AppSettings,
    state: str = Query(max_length=8192),
    code: str | None = Query(default=None, max_length=8192),
    error: str | None = Query(default=None, max_length=512),
) -> Response:
    """The redirect of a connector's OAuth2 authorization: exchanges the code and stores the
    tokens (its `state` says for whom, the browser's cookie that it started the flow; no key
    is needed)."""
    cookies = {k: v for k, v in request.cookies.items() if k.startswith(COOKIE_PREFIX)}
    name, back = await complete(
        runtime_of(request).box,
        keychain_factory(runtime_of(request), settings, work),
        work.release,
        state=state,
        code=code,
        error=error,
        cookies=cookies,
        base_url=base_url(request),
    )
    response: Response
    if back:
        response = RedirectResponse(back, status_code=302)
    else:
        response = HTMLResponse(
            f"<!doctype html><title>Connected</title><p>Connector <b>{_html(name)}</b> is "
            "authorized. You can close this window.</p>"
        )
    for cookie in cookies:  # the flow is over: its cookie is of no more use
        response.delete_cookie(cookie, path=CALLBACK_PATH)
    return response


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@router.get("/{connector_id_or_name}", responses={200: {"description": "Connector"}})
async def get_connector(
    connector_id_or_name: str,
    service: Service,
    fetch_user_data: bool = False,
    fetch_customer_data: bool = False,
) -> Response:
    """One connector, by id or name, with its cached tools and the caller's credentials (their
    names and status, never their values)."""
    return _json(await service.describe(await service.row(connector_id_or_name)))


@router.patch("/{connector_id}", responses={200: {"description": "Connector"}, **REACHES})
async def update_connector(
    connector_id: str, body: ConnectorUpdate, service: Service, tools: Tools
) -> Response:
    """Update a connector (its creator, or an admin of its level). A new server or new
    headers are reached at once."""
    row = await service.update(connector_id, body)
    if row.tools_refreshed_at is None:
        await tools.refresh(row)
        row = await service.row(row.id)
    return _json(await service.describe(row))


@router.delete("/{connector_id}", response_model=MessageOut, responses=error_responses((403,)))
async def delete_connector(connector_id: str, service: Service) -> MessageOut:
    """Delete a connector, its activations and every credential kept for it."""
    await service.delete(connector_id)
    return _message(f"connector {connector_id} deleted")


@router.get(
    "/{connector_id_or_name}/auth_url",
    response_model=AuthUrlOut,
    responses=error_responses((502, 504)),
)
async def get_auth_url(
    connector_id_or_name: str,
    request: Request,
    authorization: Authorization,
    app_return_url: str | None = Query(default=None, max_length=2048),
    method_type: AuthType | None = None,
    credentials_name: str | None = Query(default=None, pattern=CREDENTIALS_NAME),
    credentials_title: str | None = Query(default=None, max_length=256),
    github_installation_link: bool = False,
) -> AuthUrlOut:
    """The URL where a user authorizes the connector (OAuth2 authorization code with PKCE);
    the authorization server redirects to this server, which stores the tokens as the caller's
    credentials named `credentials_name` ("default" if not given), titled
    `credentials_title`."""
    return AuthUrlOut(
        **await authorization.auth_url(
            connector_id_or_name,
            base_url=base_url(request),
            credentials_name=credentials_name,
            credentials_title=credentials_title,
            app_return_url=app_return_url,
            method_type=method_type,
        )
    )


@router.put(
    "/{connector_id}/share", response_model=MessageOut, responses=error_responses((403, 409))
)
async def share_connector(connector_id: str, service: Service) -> MessageOut:
    """Give a private connector to the workspace (its creator only, with the
    ShareConnectorToWorkspace permission); `DELETE` gives it back."""
    await service.share(connector_id, "workspace")
    return _message(f"connector {connector_id} is shared with the workspace")


@router.delete(
    "/{connector_id}/share", response_model=MessageOut, responses=error_responses((403, 409))
)
async def unshare_connector(connector_id: str, service: Service) -> MessageOut:
    """Give a workspace connector back to its creator, private (its creator only, with the
    ShareConnectorToWorkspace permission): the credentials kept for it but the creator's own
    are deleted."""
    await service.unshare(connector_id, "workspace")
    return _message(f"connector {connector_id} is private again")


@router.put(
    "/{connector_id}/organization/share",
    response_model=MessageOut,
    responses=error_responses((403, 409)),
)
async def share_to_organization(connector_id: str, service: Service) -> MessageOut:
    """Give a private connector to the organization, every workspace of it (its creator only,
    an organization admin); `DELETE` gives it back."""
    await service.share(connector_id, "org")
    return _message(f"connector {connector_id} is shared with the organization")


@router.delete(
    "/{connector_id}/organization/share",
    response_model=MessageOut,
    responses=error_responses((403, 409)),
)
async def unshare_from_organization(connector_id: str, service: Service) -> MessageOut:
    """Give an organization connector back to its creator, private (its creator only, an
    organization admin): the credentials kept for it but the creator's own are deleted."""
    await service.unshare(connector_id, "org")
    return _message(f"connector {connector_id} is private again")


def _tool_config(body: ToolExecutionConfig | None) -> dict[str, Any]:
    return body.stored() if body is not None else {}


def _activated(connector_id: str, scope: ConsumerScope, active: bool) -> MessageOut:
    verb = "activated" if active else "deactivated"
    return _message(f"connector {connector_id} {verb} for the {scope} level")


@router.post(
    "/{connector_id}/{consumer_scope}/activate",
    response_model=MessageOut,
    responses=error_responses((403,)),
)
async def activate_for_consumer(
    connector_id: str,
    consumer_scope: ConsumerScope,
    service: Service,
    body: ToolExecutionConfig | None = None,
) -> MessageOut:
    """Activate a connector at a level: `organization` (an organization admin: every member),
    `workspace` (a workspace admin: the workspace) or `user` (the caller's own user), with the
    tool lists that level applies (include, exclude, requires_confirmation,
    skip_confirmation). 2.8's `…/organization|workspace|user/activate` and 3.x's
    `…/{consumer_scope}/activate` are this route."""
    await service.set_active(connector_id, LEVEL_OF[consumer_scope], True, _tool_config(body))
    return _activated(connector_id, consumer_scope, True)


@router.post(
    "/{connector_id}/{consumer_scope}/deactivate",
    response_model=MessageOut,
    responses=error_responses((403,)),
)
async def deactivate_for_consumer(
    connector_id: str, consumer_scope: ConsumerScope, service: Service
) -> MessageOut:
    """Deactivate a connector at a level (`organization`, `workspace` or `user`; the same
    rights as activating it)."""
    await service.set_active(connector_id, LEVEL_OF[consumer_scope], False, None)
    return _activated(connector_id, consumer_scope, False)


@router.get(
    "/{connector_id_or_name}/tools", responses={200: {"description": "MCP tools"}, **REACHES}
)
async def list_tools(
    connector_id_or_name: str,
    tools: Tools,
    page: int = 1,
    page_size: int = 100,
    refresh: bool = False,
    pretty: bool = False,
    credentials_name: str | None = Query(default=None, max_length=128),
) -> Response:
    """The connector's tools (MCP tool definitions), from the cache while it is younger than
    its TTL (`refresh=true` reaches the server now)."""
    return _json(
        await tools.list_tools(
            connector_id_or_name,
            refresh=refresh,
            credentials_name=credentials_name,
            page=page,
            page_size=page_size,
        )
    )


@router.get(
    "/{connector_id_or_name}/authentication_methods",
    responses={200: {"description": "PublicAuthenticationMethod list"}},
)
async def get_authentication_methods(connector_id_or_name: str, service: Service) -> Response:
    """How the connector's server can be authenticated to."""
    described = await service.describe(await service.row(connector_id_or_name), with_tools=False)
    return _json(described["supported_auth_methods"])


# The credentials routes, 2.8's and 3.x's, are their own module's.
router.include_router(credentials_router)
