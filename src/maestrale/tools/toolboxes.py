"""The toolboxes of built-in tools, and the factory that joins them to the connectors' one: a
conversation's tool list may mix client functions, connectors and built-in tools, and each kind
of server-run tool is built by its own factory."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from maestrale.conversations.server_tools import (
    ServerTool,
    ServerToolbox,
    ToolboxFactory,
    ToolOutcome,
    ToolUnavailable,
)
from maestrale.core.auth.principal import Tenant
from maestrale.core.uow import UnitOfWork
from maestrale.tools.base import (
    BuiltinTool,
    CheckedTool,
    PreparedTool,
    ToolContext,
    ToolServices,
)

if TYPE_CHECKING:
    from maestrale.config import Settings

log = logging.getLogger("maestrale.tools")


@dataclass(frozen=True, slots=True)
class _Offered:
    tool: BuiltinTool
    entry: dict[str, Any]


class BuiltinToolbox:
    """The built-in tools of one request, run with the caller's tenant."""

    def __init__(self, services: ToolServices, tenant: Tenant) -> None:
        self.services = services
        self.tenant = tenant
        self._tools: list[ServerTool] = []
        self._offered: dict[str, _Offered] = {}

    def add(self, tool: BuiltinTool, entry: dict[str, Any]) -> None:
        offered = tool.offer(entry)
        if offered.name in self._offered:  # the same type twice: the first entry's
            return
        self._tools.append(offered)
        self._offered[offered.name] = _Offered(tool, entry)

    def tools(self) -> Sequence[ServerTool]:
        return self._tools

    async def run(self, tool: ServerTool, arguments: dict[str, Any]) -> ToolOutcome:
        offered = self._offered[tool.name]
        context = ToolContext(self.tenant, self.services, offered.entry)
        return await offered.tool.run(context, arguments)


class BuiltinToolboxes:
    """The ToolboxFactory of built-in tool types (`document_library`, `code_interpreter`,
    `web_search`, `web_search_premium`, `image_generation`)."""

    def __init__(self, services: ToolServices, tools: Mapping[str, BuiltinTool]) -> None:
        self.services = services
        self.kinds = dict(tools)

    def handles(self, tool_type: str) -> bool:
        return tool_type in self.kinds

    def seal(self, tenant: Tenant, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(tools)  # built-in tools carry no secrets

    async def build(
        self, work: UnitOfWork, tenant: Tenant, tools: Sequence[dict[str, Any]]
    ) -> ServerToolbox:
        """The toolbox of the built-in tools in `tools`; a 400 `tool_unavailable` naming what to
        configure for one this server cannot run (no search backend, no sandbox...)."""
        toolbox = BuiltinToolbox(self.services, tenant)
        for entry in tools:
            tool = self.kinds.get(str(entry.get("type")))
            if tool is None:
                continue
            if isinstance(tool, PreparedTool):
                reason = await tool.prepare(self.services.settings)
            else:
                reason = tool.unavailable(self.services.settings)
            if reason is not None:
                raise ToolUnavailable(
                    f"tool type {tool.type!r} cannot run on this server: {reason}", param="tools"
                )
            if isinstance(tool, CheckedTool):
                await tool.check(work.session, tenant, entry)
            toolbox.add(tool, entry)
        return toolbox


class JoinedToolbox:
    """Several toolboxes as one; a name offered twice is the first toolbox's (built-in tools
    come first, so that a connector's tool cannot shadow one)."""

    def __init__(self, boxes: Sequence[ServerToolbox]) -> None:
        self._owner: dict[str, ServerToolbox] = {}
        self._tools: list[ServerTool] = []
        for box in boxes:
            for tool in box.tools():
                if tool.name in self._owner:
                    log.info("server tool %r offered twice: the first one is kept", tool.name)
                    continue
                self._owner[tool.name] = box
                self._tools.append(tool)

    def tools(self) -> Sequence[ServerTool]:
        return self._tools

    async def run(self, tool: ServerTool, arguments: dict[str, Any]) -> ToolOutcome:
        return await self._owner[tool.name].run(tool, arguments)


class JoinedToolboxes:
    """Several ToolboxFactories as one (each builds the tools of the types it handles)."""

    def __init__(self, factories: Sequence[ToolboxFactory]) -> None:
        self.factories = list(factories)

    def handles(self, tool_type: str) -> bool:
        return any(factory.handles(tool_type) for factory in self.factories)

    def seal(self, tenant: Tenant, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        sealed = list(tools)
        for factory in self.factories:
            sealed = factory.seal(tenant, sealed)
        return sealed

    async def build(
        self, work: UnitOfWork, tenant: Tenant, tools: Sequence[dict[str, Any]]
    ) -> ServerToolbox:
        boxes = []
        for factory in self.factories:
            if any(factory.handles(str(t.get("type", "function"))) for t in tools):
                boxes.append(await factory.build(work, tenant, tools))
        return boxes[0] if len(boxes) == 1 else JoinedToolbox(boxes)


def builtin_tools(settings: Settings) -> dict[str, BuiltinTool]:
    """Every built-in tool type this server knows, by type (whether each can run here is its
    `unavailable`)."""
    from maestrale.tools.code import CodeInterpreter
    from maestrale.tools.images.tool import ImageGeneration
    from maestrale.tools.library import DocumentLibrary
    from maestrale.tools.web.tool import WebSearch

    tools: list[BuiltinTool] = [
        DocumentLibrary(),
        CodeInterpreter(),
        WebSearch(premium=False),
        WebSearch(premium=True),
        ImageGeneration(settings.image_generation_sizes),
    ]
    return {tool.type: tool for tool in tools}
