"""What the MCP client hands back: a server's card and tools (`ServerInfo`), a tool call's result
(`ToolResult`), both as MCP wire JSON (camelCase), and the bounds put on what a server sends.

Bounds (a tool server is not trusted): at most `MAX_TOOLS` tools, each at most `MAX_TOOL_BYTES`
of JSON (bigger ones are skipped, as are repeated names); a tool result whose content, structured
content and `_meta` together pass `MAX_RESULT_BYTES` of JSON is refused with
McpFailure("protocol"): a cut result could drop the part that matters and pass for whole.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from pydantic import BaseModel, TypeAdapter

from maestrale.connectors.mcp.failures import McpFailure

logger = logging.getLogger(__name__)

MAX_TOOLS = 512
MAX_TOOL_BYTES = 64 * 1024
MAX_RESULT_BYTES = 1024 * 1024
MAX_PAGES = 64
_MAX_CARD_TEXT = 4096
_MAX_ICONS = 8
_MAX_ICON_BYTES = 8 * 1024
_MAX_CAPABILITY_BYTES = 4 * 1024


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """A tool server as discovered: its card (MCPServerCard-shaped: name, version, title,
    description, websiteUrl, icons, capabilities, remotes, and `_meta` with the negotiated
    protocolVersion and the server's instructions) and its tools as MCP Tool JSON."""

    card: dict[str, Any]
    tools: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of a tool call: MCP content blocks as JSON, whether the tool reported an error
    (isError, which is a result the model should see, not a failure), structuredContent, _meta."""

    content: list[dict[str, Any]]
    is_error: bool
    structured: dict[str, Any] | None
    meta: dict[str, Any] | None

    def text(self) -> str:
        """The text a model reads: text blocks as they are, other blocks summarised on a line
        of their own; the structured content as JSON when there is no block at all."""
        lines = [_block_text(block) for block in self.content]
        if not lines and self.structured is not None:
            return json.dumps(self.structured, ensure_ascii=False)
        return "\n".join(lines)


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind} {block.get('mimeType', 'unknown')}]"
    if kind == "resource_link":
        return f"[resource link {block.get('uri', '')}]"
    if kind == "resource":
        resource = block.get("resource") or {}
        if isinstance(resource.get("text"), str):
            return str(resource["text"])
        return f"[resource {resource.get('uri', '')} {resource.get('mimeType', '')}]".replace(
            " ]", "]"
        )
    return f"[{kind}]"


def json_size(value: Any) -> int:
    """Bytes of `value` as compact UTF-8 JSON."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _wire(model: BaseModel) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


def collect_tools(pages: list[types.ListToolsResult]) -> list[dict[str, Any]]:
    """The tools of all pages as wire JSON, bounded (see the module docstring)."""
    tools: list[dict[str, Any]] = []
    names: set[str] = set()
    skipped = 0
    for page in pages:
        for tool in page.tools:
            data = _wire(tool)
            if tool.name in names or json_size(data) > MAX_TOOL_BYTES:
                skipped += 1
                continue
            if len(tools) == MAX_TOOLS:
                logger.warning(
                    "MCP server lists more than %d tools; the rest are ignored", MAX_TOOLS
                )
                return tools
            names.add(tool.name)
            tools.append(data)
    if skipped:
        logger.warning(
            "skipped %d MCP tools (repeated name or over %d bytes)", skipped, MAX_TOOL_BYTES
        )
    return tools


def tool_result(result: types.CallToolResult) -> ToolResult:
    """The ToolResult of a tools/call answer; McpFailure("protocol") when it is too large."""
    return _bounded([_wire(block) for block in result.content], result)


def _bounded(content: list[dict[str, Any]], result: types.CallToolResult) -> ToolResult:
    structured = result.structured_content
    meta = result.meta
    if json_size([content, structured, meta]) > MAX_RESULT_BYTES:
        raise McpFailure(
            "protocol", f"the tool's result is larger than {MAX_RESULT_BYTES // 1024} KiB"
        )
    return ToolResult(
        content=content,
        is_error=bool(result.is_error),
        structured=dict(structured) if isinstance(structured, dict) else None,
        meta=dict(meta) if meta else None,
    )


_CONTENT_BLOCK: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)


def tool_result_of(raw: dict[str, Any]) -> ToolResult:
    """`tool_result` of a tools/call result kept aside as parsed JSON (`wire.OFFLOADED`), in a
    worker thread: validated block by block, each step short enough for the event loop to get
    the GIL back in between (the SDK's one validation of the whole holds it for seconds), and
    refused as soon as the blocks pass the size limit. ValidationError on an invalid result."""
    envelope = types.CallToolResult.model_validate({**raw, "content": []})
    limit = MAX_RESULT_BYTES - json_size([None, envelope.structured_content, envelope.meta])
    content: list[dict[str, Any]] = []
    size = 0
    for block in raw["content"]:
        data = _wire(_CONTENT_BLOCK.validate_python(block))
        size += json_size(data) + 1
        if size > limit:
            raise McpFailure(
                "protocol", f"the tool's result is larger than {MAX_RESULT_BYTES // 1024} KiB"
            )
        content.append(data)
    return _bounded(content, envelope)


def tools_page_of(raw: dict[str, Any]) -> types.ListToolsResult:
    """A tools/list page kept aside as parsed JSON, validated tool by tool in a worker thread
    (see `tool_result_of`)."""
    page = types.ListToolsResult.model_validate({**raw, "tools": []})
    page.tools = [types.Tool.model_validate(tool) for tool in raw["tools"]]
    return page


def server_card(result: types.InitializeResult, *, server: str, transport: str) -> dict[str, Any]:
    """The card of a server from its initialize result, with the fields a server controls cut
    to a size fit to store and show."""
    info = _wire(result.server_info)
    card: dict[str, Any] = {}
    for key in ("name", "version", "title", "description", "websiteUrl"):
        if isinstance(info.get(key), str):
            card[key] = info[key][:_MAX_CARD_TEXT]
    icons = [icon for icon in info.get("icons") or [] if json_size(icon) <= _MAX_ICON_BYTES]
    if icons:
        card["icons"] = icons[:_MAX_ICONS]
    capabilities = _wire(result.capabilities)
    card["capabilities"] = {
        key: value
        for key, value in capabilities.items()
        if json_size(value) <= _MAX_CAPABILITY_BYTES
    }
    card["remotes"] = [{"type": transport, "url": server}]
    meta: dict[str, Any] = {"protocolVersion": result.protocol_version}
    if result.instructions:
        meta["instructions"] = result.instructions[:_MAX_CARD_TEXT]
    card["_meta"] = meta
    return card
