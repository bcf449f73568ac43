"""A connector's tools: discovering them on its server (on create, on demand, and when the cache
is older than its TTL), listing them, and calling one directly (the toolbox that offers them to a
conversation's model is in `toolbox`). Every server call runs with no transaction open: what a
call needs is read first (`ServerEndpoint`), the runtime ends the transaction (given its `release`),
the call runs, and what it learnt is stored in a short transaction of its own."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from maestrale.connectors.errors import ConnectorForbidden, ConnectorInactive, ToolServerFailed
from maestrale.connectors.keychain import Keychain
from maestrale.connectors.mcp import McpFailure, ServerInfo, ToolResult
from maestrale.connectors.network import ConnectorRuntime, Resolved, ServerEndpoint
from maestrale.connectors.tables import Connector
from maestrale.core.clock import as_utc, utcnow
from maestrale.core.errors import BadRequest, UpstreamTimeout
from maestrale.core.fetch import UrlNotAllowed
from maestrale.core.uow import Release


def stale(row: Connector, ttl: float) -> bool:
    if row.tools is None or row.tools_refreshed_at is None:
        return True
    return utcnow() - as_utc(row.tools_refreshed_at) > timedelta(seconds=ttl)


def failure_reason(exc: McpFailure) -> str:
    """What the tools cache records of a failed discovery (its reason first)."""
    return f"{exc.reason}: {exc}"


async def discover(
    runtime: ConnectorRuntime, endpoint: ServerEndpoint, release: Release | None = None
) -> ServerInfo | None:
    """Reach the server (once `release` ended the caller's transaction), read its card and
    tools, and cache them on the connector; a server that cannot be reached (or refuses the
    caller) leaves the tools known before, and says why."""
    try:
        info = await runtime.discover(endpoint, release)
    except McpFailure as exc:
        await runtime.remember(endpoint.connector_id, None, failure_reason(exc))
        return None
    await runtime.remember(endpoint.connector_id, info, None)
    return info


def call_response(result: ToolResult) -> dict[str, Any]:
    """The SDK's ConnectorToolCallResponse."""
    return {
        "content": result.content,
        "metadata": {
            "mcp_meta": {
                "isError": result.is_error,
                "structuredContent": result.structured,
                "_meta": result.meta,
            }
        },
    }


def direct_failure(exc: McpFailure, connector: str) -> Exception:
    """The error of a direct tool call the server failed."""
    if exc.reason == "timeout":
        return UpstreamTimeout(f"connector {connector!r} did not answer in time: {exc}")
    if exc.reason == "refused":
        return UrlNotAllowed(str(exc))
    if exc.reason == "error":
        return BadRequest(
            f"connector {connector!r} refused the call: {exc}", code="connector_tool_error"
        )
    code = "connector_unauthorized" if exc.reason == "unauthorized" else None
    return ToolServerFailed(f"connector {connector!r}: {exc}", code=code)


class ConnectorTools:
    """The tools endpoints of the group: the connectors the keychain's service finds, reached
    with the keychain's credentials."""

    def __init__(self, keychain: Keychain, release: Release) -> None:
        self.service = keychain.connectors
        self.keychain = keychain
        self.release = release

    async def refresh(self, row: Connector, credentials_name: str | None = None) -> None:
        endpoint = await self.keychain.endpoint(row, credentials_name)
        await discover(self.service.runtime, endpoint, self.release)

    async def list_tools(
        self,
        id_or_name: str,
        *,
        refresh: bool,
        credentials_name: str | None,
        page: int,
        page_size: int,
    ) -> list[dict[str, Any]]:
        if page < 1 or not 1 <= page_size <= 1000 or page > 2**31:
            raise BadRequest(
                "page must be >= 1 and page_size between 1 and 1000", code="invalid_page"
            )
        row = await self.service.row(id_or_name)
        if refresh or stale(row, self.service.settings.tools_ttl):
            await self.refresh(row, credentials_name)
            row = await self.service.row(row.id)
        policy = await self.service.policy(row)
        tools = [t for t in row.tools or [] if policy.allows(str(t.get("name")))]
        start = (page - 1) * page_size
        return tools[start : start + page_size]

    async def call(
        self,
        id_or_name: str,
        tool_name: str,
        arguments: dict[str, Any],
        credentials_name: str | None,
    ) -> dict[str, Any]:
        resolved = await self.resolve(id_or_name, credentials_name)
        name, policy = resolved.name, resolved.policy
        if not policy.active:
            raise ConnectorInactive(f"connector {name!r} is deactivated for this caller")
        if not policy.allows(tool_name):
            raise ConnectorForbidden(
                f"tool {tool_name[:128]!r} of connector {name!r} is excluded for this caller"
            )
        try:
            result = await self.service.runtime.call(
                resolved.endpoint, tool_name, arguments, self.release
            )
        except McpFailure as exc:
            raise direct_failure(exc, name) from exc
        return call_response(result)

    async def resolve(self, id_or_name: str, credentials_name: str | None) -> Resolved:
        """The connector, the caller's policy and credentials: read, or as read within the
        runtime's cache TTL."""
        runtime = self.service.runtime
        key = (self.service.tenant, id_or_name, credentials_name)
        resolved = runtime.resolved(key)
        if resolved is None:
            row = await self.service.row(id_or_name)
            resolved = Resolved(
                await self.keychain.endpoint(row, credentials_name),
                await self.service.policy(row),
                row.name,
            )
            runtime.keep(key, resolved)
        return resolved
