"""The MCP client of connectors: pooled sessions to MCP tool servers over streamable HTTP (or the
legacy SSE transport), behind the SSRF guard, bounded in time and size.

    clients = McpClients(allow_private=settings_allow_private)
    info = await clients.discover(url, headers, timeout=10)
    result = await clients.call_tool(url, headers, "echo", {"text": "hi"}, timeout=30)
    await clients.aclose()
"""

from maestrale.connectors.mcp.client import McpClients
from maestrale.connectors.mcp.failures import McpFailure
from maestrale.connectors.mcp.results import ServerInfo, ToolResult

__all__ = ["McpClients", "McpFailure", "ServerInfo", "ToolResult"]
