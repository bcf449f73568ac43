"""The toolbox that offers connectors' tools to a conversation's model (the tools of the
connectors a request names, active for its caller, filtered by their policies), and how a model's
call of one runs. The tool lists are read, or fetched again when older than their TTL, with the
request's transaction ended first."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from typing import Any

from maestrale.connectors.errors import ConnectorInactive, ConnectorNotFound
from maestrale.connectors.keychain import Keychain
from maestrale.connectors.mcp import McpFailure
from maestrale.connectors.network import ConnectorRuntime, ServerEndpoint
from maestrale.connectors.policy import ToolPolicy
from maestrale.connectors.service import ConnectorService, ConnectorSettings
from maestrale.connectors.tables import Connector
from maestrale.connectors.tool_secrets import open_value, seal_tools
from maestrale.connectors.tools import discover, stale
from maestrale.conversations.server_tools import ServerTool, ServerToolbox, ToolOutcome
from maestrale.core.auth.principal import Tenant
from maestrale.core.uow import UnitOfWork

_FUNCTION_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def function_name(name: str) -> str:
    return _FUNCTION_NAME.sub("_", name)[:64] or "tool"


class ConnectorToolbox:
    """The connector tools one request offers its model, and how it runs them."""

    def __init__(self, runtime: ConnectorRuntime) -> None:
        self.runtime = runtime
        self._tools: list[ServerTool] = []
        self._routes: dict[str, tuple[ServerEndpoint, str]] = {}

    def add(self, tool: ServerTool, endpoint: ServerEndpoint, remote_name: str) -> None:
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
        self, work: UnitOfWork, tenant: Tenant, tools: Sequence[dict[str, Any]]
    ) -> ServerToolbox:
        """Read the connectors `tools` name (visible to the caller and active for it), their
        policies and the caller's credentials in `work`, whose transaction then ends if a tool
        list must be fetched again (older than its TTL) before the toolbox is made."""
        wanted = [t for t in tools if t.get("type") == "connector"]
        toolbox = ConnectorToolbox(self.runtime)
        if not wanted:
            return toolbox
        service = ConnectorService(work.session, tenant, self.runtime, self.settings)
        keychain = Keychain(service)
        names = [str(t.get("connector_id") or "") for t in wanted]
        rows = await service.repo.find_many(names)
        by_key = {key: row for row in rows for key in (row.id, row.name)}
        chosen: list[tuple[Connector, ToolPolicy, ServerEndpoint]] = []
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
            endpoint = await keychain.endpoint(row)
            token = (spec.get("authorization") or {}).get("value")
            if isinstance(token, str) and token:
                token = open_value(self.runtime.box, tenant.workspace_id, token)
                endpoint = endpoint.with_authorization(token)
            chosen.append((row, policy, endpoint))
        lists = await self._tool_lists(work, [(r, e) for r, _, e in chosen])
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
        self, work: UnitOfWork, targets: list[tuple[Connector, ServerEndpoint]]
    ) -> list[list[dict[str, Any]]]:
        """Each connector's cached tools, fetched again first (concurrently, with the session's
        transaction ended) where the cache is missing or older than its TTL."""
        lists = [list(row.tools or []) for row, _ in targets]
        todo = [i for i, (row, _) in enumerate(targets) if stale(row, self.settings.tools_ttl)]
        if not todo:
            return lists
        # Ended once, not by each concurrent discovery: they share the unit of work.
        await work.release()
        found = await asyncio.gather(*(discover(self.runtime, targets[i][1]) for i in todo))
        for i, info in zip(todo, found, strict=True):
            if info is not None:
                lists[i] = info.tools
        return lists
