"""A connector's tools: discovering them on its server (on create, on demand, and when the cache
is older than its TTL), listing them, calling one directly, and the toolbox that offers them to a
conversation's model. Every server call runs with no transaction open: what a call needs is read
first (`Endpoint`), the transaction ends, the call runs, and what it learnt is stored in a short
transaction of its own."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.connectors.errors import (
    ConnectorForbidden,
    ConnectorInactive,
    ConnectorNotFound,
    ToolServerFailed,
)
from maestrale.connectors.mcp import McpFailure, ServerInfo, ToolResult
from maestrale.connectors.policy import ToolPolicy
from maestrale.connectors.runtime import ConnectorRuntime, Endpoint, Resolved
from maestrale.connectors.service import ConnectorService, ConnectorSettings
from maestrale.connectors.tables import Connector
from maestrale.connectors.tool_secrets import open_value, seal_tools
from maestrale.conversations.server_tools import ServerTool, ServerToolbox, ToolOutcome
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import as_utc, utcnow
from maestrale.core.errors import BadRequest, UpstreamTimeout
from maestrale.core.fetch import UrlNotAllowed

Release = Callable[[], Awaitable[None]]
_FUNCTION_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def stale(row: Connector, ttl: float) -> bool:
    if row.tools is None or row.tools_refreshed_at is None:
        return True
    return utcnow() - as_utc(row.tools_refreshed_at) > timedelta(seconds=ttl)


def failure_reason(exc: McpFailure) -> str:
    """What the tools cache records of a failed discovery (its reason first)."""
    return f"{exc.reason}: {exc}"


async def discover(runtime: ConnectorRuntime, endpoint: Endpoint) -> ServerInfo | None:
    """Reach the server, read its card and tools, and cache them on the connector; a server that
    cannot be reached (or refuses the caller) leaves the tools known before, and says why."""
    try:
        info = await runtime.discover(endpoint)
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
    """The tools endpoints of the group."""

    def __init__(self, service: ConnectorService, release: Release) -> None:
        self.service = service
        self.release = release

    async def refresh(self, row: Connector, credentials_name: str | None = None) -> None:
        endpoint = await self.service.endpoint(row, credentials_name)
        await self.release()
        await discover(self.service.runtime, endpoint)

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
        await self.release()
        try:
            result = await self.service.runtime.call(resolved.endpoint, tool_name, arguments)
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
                await self.service.endpoint(row, credentials_name),
                await self.service.policy(row),
                row.name,
            )
            runtime.keep(key, resolved)
        return resolved


def function_name(name: str) -> str:
    return _FUNCTION_NAME.sub("_", name)[:64] or "tool"


class ConnectorToolbox:
    """The connector tools one request offers its model, and how it runs them."""

    def __init__(self, runtime: ConnectorRuntime) -> None:
        self.runtime = runtime
        self._tools: list[ServerTool] = []
        self._routes: dict[str, tuple[Endpoint, str]] = {}

    def add(self, tool: ServerTool, endpoint: Endpoint, remote_name: str) -> None:
        self._tools.append(tool)
        self._routes[tool.name] = (endpoint, remote_name)

    def tools(self) -> Sequence[ServerTool]:
        return self._tools

    async def run(self, tool: ServerTool, arguments: dict[str, Any]) -> ToolOutcome:
        endpoint, remote = self._routes[tool.name]
        started = time.perf_counter()
        try:
            result = await self.runtime.call(endpoint, remote, arguments)
        except McpFailure as exc:
            return ToolOutcome(
                output=f"error: {exc}",
                error=str(exc),
                info={"failure": exc.reason, "duration_ms": _ms(started)},
            )
        text = result.text()
        info: dict[str, Any] = {"content": result.content, "duration_ms": _ms(started)}
        if result.structured is not None:
            info["structured_content"] = result.structured
        if result.is_error:
            return ToolOutcome(output=f"error: {text}", error=text or "the tool failed", info=info)
        return ToolOutcome(output=text, info=info)


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


class ConnectorToolboxes:
    """The ToolboxFactory of connector tools (`{"type": "connector", "connector_id": ...}`)."""

    def __init__(self, runtime: ConnectorRuntime, settings: ConnectorSettings) -> None:
        self.runtime = runtime
        self.settings = settings

    def handles(self, tool_type: str) -> bool:
        return tool_type == "connector"

    def seal(self, tenant: Tenant, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return seal_tools(self.runtime.box, tenant.workspace_id, tools)

    async def build(
        self, session: AsyncSession, tenant: Tenant, tools: Sequence[dict[str, Any]]
    ) -> ServerToolbox:
        """Read the connectors `tools` name (visible to the caller and active for it), their
        policies and the caller's credentials; the session's transaction then ends if a tool
        list must be fetched again (older than its TTL) before the toolbox is made."""
        wanted = [t for t in tools if t.get("type") == "connector"]
        toolbox = ConnectorToolbox(self.runtime)
        if not wanted:
            return toolbox
        service = ConnectorService(session, tenant, self.runtime, self.settings)
        names = [str(t.get("connector_id") or "") for t in wanted]
        rows = await service.repo.find_many(names)
        by_key = {key: row for row in rows for key in (row.id, row.name)}
        chosen: list[tuple[Connector, ToolPolicy, Endpoint]] = []
        for spec, key in zip(wanted, names, strict=True):
            row = by_key.get(key)
            if row is None:
                raise ConnectorNotFound(f"connector {key[:200]!r} not found", param="tools")
            request = spec.get("tool_configuration") or None
            policy = await service.policy(row, request if isinstance(request, dict) else None)
            if not policy.active:
                raise ConnectorInactive(
                    f"connector {row.name!r} is deactivated for this caller", param="tools"
                )
            endpoint = await service.endpoint(row)
            token = (spec.get("authorization") or {}).get("value")
            if isinstance(token, str) and token:
                token = open_value(self.runtime.box, tenant.workspace_id, token)
                endpoint = endpoint.with_authorization(token)
            chosen.append((row, policy, endpoint))
        lists = await self._tool_lists(session, [(r, e) for r, _, e in chosen])
        taken: set[str] = set()
        for (row, policy, endpoint), listed in zip(chosen, lists, strict=True):
            for tool in listed:
                remote = str(tool.get("name") or "")
                if not remote or not policy.allows(remote):
                    continue
                name = function_name(remote)
                if name in taken:
                    name = function_name(f"{row.name}_{remote}")
                if name in taken:
                    continue
                taken.add(name)
                toolbox.add(
                    ServerTool(
                        name=name,
                        description=str(tool.get("description") or tool.get("title") or remote),
                        parameters=tool.get("inputSchema") or {"type": "object", "properties": {}},
                        requires_confirmation=policy.needs_confirmation(tool),
                        source={
                            "connector_id": row.id,
                            "connector_name": row.name,
                            "tool": remote,
                        },
                    ),
                    endpoint,
                    remote,
                )
        return toolbox

    async def _tool_lists(
        self, session: AsyncSession, targets: list[tuple[Connector, Endpoint]]
    ) -> list[list[dict[str, Any]]]:
        """Each connector's cached tools, fetched again first (concurrently, with the session's
        transaction ended) where the cache is missing or older than its TTL."""
        lists = [list(row.tools or []) for row, _ in targets]
        todo = [i for i, (row, _) in enumerate(targets) if stale(row, self.settings.tools_ttl)]
        if not todo:
            return lists
        await session.commit()
        found = await asyncio.gather(*(discover(self.runtime, targets[i][1]) for i in todo))
        for i, info in zip(todo, found, strict=True):
            if info is not None:
                lists[i] = info.tools
        return lists
