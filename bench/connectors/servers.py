"""The processes of a run: the MCP tool server (`bench/connectors/mcp_server.py`) and `maestrale
serve`, started as `tests/support/live.py` does and allowed to reach the loopback MCP server; the
connector that points at it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import aiohttp

from bench.gateway.processes import BenchError
from bench.gateway.targets import Spec, migrate_maestrale
from bench.harness import start_process
from tests.support.live import start_server


async def start_mcp_server(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`python -m bench.connectors.mcp_server` on a free port: the process and its endpoint."""
    cmd = [sys.executable, "-m", "bench.connectors.mcp_server"]
    return await start_process(cmd, log, "the MCP server")


async def start_maestrale(
    db_url: str, tmp: Path, label: str
) -> tuple[subprocess.Popen[bytes], str]:
    """`maestrale migrate` (bench/gateway's, in `tmp/label`), then `maestrale serve --no-worker`
    on that data dir, private addresses allowed for connectors (the MCP server listens on
    127.0.0.1, which is refused by default)."""
    migrate = await asyncio.to_thread(migrate_maestrale, Spec(label, "maestrale"), tmp, db_url)
    if await asyncio.to_thread(migrate.wait, 300) != 0:
        log = (tmp / label / "migrate.log").read_text(errors="replace")
        raise BenchError(f"`maestrale migrate` failed: {log[-2000:]}")
    env = {"MAESTRALE_CONNECTOR_ALLOW_PRIVATE": "true", "MAESTRALE_LOG_LEVEL": "WARNING"}
    args = ("--no-worker", "--database-url", db_url)
    try:
        return await asyncio.to_thread(start_server, tmp / label / "data", *args, env=env)
    except RuntimeError as exc:
        raise BenchError(str(exc)[-3000:]) from exc


async def create_connector(http: aiohttp.ClientSession, url: str, name: str, server: str) -> None:
    """`POST /v1/connectors`: Maestrale reaches the server and lists its tools at once."""
    body = {"name": name, "description": "benchmark tools", "server": server}
    async with http.post(f"{url}/v1/connectors", json=body) as response:
        data = await response.json()
        if response.status != 201:
            raise BenchError(f"create connector: HTTP {response.status} {data}")
    if "echo" not in {tool.get("name") for tool in data.get("tools") or []}:
        raise BenchError(f"the connector does not list the tool echo: {str(data)[:500]}")
