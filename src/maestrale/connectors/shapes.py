"""The JSON of connectors, their tools and credentials (the SDK's Connector, ConnectorTool,
MCPTool, AuthenticationConfiguration, PublicAuthenticationMethod): every key the SDK requires,
and never a secret (header values, tokens, client secrets stay sealed; header names are shown)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from maestrale.connectors.policy import ToolPolicy
from maestrale.connectors.tables import Connector, ConnectorCredential
from maestrale.core.clock import as_utc

OWNER_TYPES = {"private": "user", "shared_workspace": "workspace", "shared_org": "org"}


def _iso(value: Any) -> str | None:
    return as_utc(value).isoformat().replace("+00:00", "Z") if value is not None else None


def tool_id(connector_id: str, name: str) -> str:
    """A stable id for a connector's tool (its server gives none)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"maestrale:connector:{connector_id}:{name}"))


def connector_tool(row: Connector, tool: dict[str, Any], policy: ToolPolicy) -> dict[str, Any]:
    name = str(tool.get("name", ""))
    return {
        "id": tool_id(row.id, name),
        "name": name,
        "description": tool.get("description") or tool.get("title") or "",
        "execution_config": {"type": "mcp", "connector_id": row.id, "tool": name},
        "visibility": row.visibility,
        "created_at": _iso(row.tools_refreshed_at or row.created_at),
        "modified_at": _iso(row.tools_refreshed_at or row.modified_at),
        "system_prompt": None,
        "locale": None,
        "jsonschema": tool.get("inputSchema"),
        "active": policy.active and policy.allows(name),
    }


def credential_json(row: ConnectorCredential) -> dict[str, Any]:
    status: dict[str, Any] = {
        "status_type": row.status,
        "last_checked_at": _iso(row.last_checked_at),
        "error_http_code": None,
        "error_message": row.status_reason,
    }
    return {
        "name": row.name,
        "authentication_type": row.auth_type,
        "scope": row.scope,
        "title": row.title,
        "status": status,
        "is_default": row.is_default,
    }


def auth_methods(
    row: Connector, header_names: Sequence[str], credentials: Sequence[ConnectorCredential]
) -> list[dict[str, Any]]:
    """How the connector's server can be authenticated to, and whether the caller has default
    credentials for each way."""
    headers = [{"name": h, "is_required": True, "is_secret": True} for h in header_names]
    if row.auth_methods:  # declared by its creator (3.x `auth_methods`)
        declared = row.auth_methods
    else:
        oauth = bool(row.oauth_metadata or row.oauth_metadata_url or row.oauth_client_sealed)
        kinds = ["oauth2", "bearer"] if oauth or _needs_auth(row) else ["none", "bearer", "oauth2"]
        declared = [{"method_type": kind, "headers": None} for kind in kinds]
    return [
        {
            **method,
            "has_default_credentials": any(
                c.auth_type == method["method_type"] and c.is_default for c in credentials
            )
            or (method["method_type"] == "none" and not _needs_auth(row)),
            "headers": method.get("headers") or headers or None,
        }
        for method in declared
    ]


def _needs_auth(row: Connector) -> bool:
    return bool(row.tools_error and row.tools_error.startswith("unauthorized"))


def connector_json(
    row: Connector,
    *,
    policy: ToolPolicy,
    header_names: Sequence[str] = (),
    credentials: Sequence[ConnectorCredential] = (),
    with_tools: bool = True,
) -> dict[str, Any]:
    tools = row.tools
    authenticated = bool(credentials) or (tools is not None and not _needs_auth(row))
    return {
        "id": row.id,
        "name": row.name,
        "description": row.description,
        "created_at": _iso(row.created_at),
        "modified_at": _iso(row.modified_at),
        "owner_type": OWNER_TYPES.get(row.visibility, row.owner_type),
        "visibility": row.visibility,
        "private_tool_execution": row.visibility == "private",
        "title": row.title,
        "server": row.server,
        "protocol": row.protocol,
        # Every connector here is an MCP server (3.x requires the flag).
        "supports_mcp": row.protocol == "mcp",
        "icon_url": row.icon_url,
        "server_card": row.server_card,
        "owner_id": row.owner_id,
        "creator_id": row.creator_id,
        "locale": None,
        "system_prompt": row.system_prompt,
        "supported_auth_methods": auth_methods(row, header_names, credentials),
        "connection_preferences": [
            {
                "name": scope,
                "tool_configuration": config,
                "is_default": None,
                "consumer_type": scope,
            }
            for scope, config in policy.levels
        ],
        "connection_credentials": [credential_json(c) for c in credentials],
        "active": policy.active,
        "blocked_by": list(policy.blocked_by),
        "mistral": False,
        "is_authenticated": authenticated,
        "tools": (
            [connector_tool(row, t, policy) for t in tools]
            if with_tools and tools is not None
            else None
        ),
        "system_prompt_route": None,
        "connection_config": {
            "type": "mcp",
            "base_url": row.server,
            "headers": None,
            "signed": None,
        },
        "execution_env": None,
    }
