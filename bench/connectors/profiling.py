"""`--profile DIR`: py-spy of the Maestrale server during sequential direct tool calls, run and
summarized by bench/workflows/profiling.py with the steps of a connector call in place of those of
an execute-and-wait."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

from bench.harness import Call
from bench.workflows import profiling

# Steps of `POST /v1/connectors/{id}/tools/{tool}/call`, by function (qualified names as py-spy
# prints them); a step's share is the samples with one of them on the stack. py-spy shows the
# ORM's greenlets and the SDK's tasks on stacks of their own: the steps overlap, and the whole
# request does not hold them.
STEPS = (
    ("whole request (uvicorn run_asgi)", ("RequestResponseCycle.run_asgi",)),
    ("  FastAPI route matching (_IncludedRouter._match)", ("_IncludedRouter._match",)),
    ("  auth + dependencies + body (solve_dependencies)", ("solve_dependencies",)),
    ("  ConnectorTools.call", ("ConnectorTools.call",)),
    ("    ConnectorService.row (read the connector)", ("ConnectorService.row",)),
    ("    ConnectorService.policy (activations)", ("ConnectorService.policy",)),
    ("    Keychain.endpoint (credentials)", ("Keychain.endpoint",)),
    ("    release (end of the transaction)", ("UnitOfWork.release", "UnitOfWork.commit")),
    ("    ConnectorRuntime.call (the MCP call, this task)", ("ConnectorRuntime.call",)),
    ("  sending the response (uvicorn send)", ("RequestResponseCycle.send",)),
    (
        "the SDK's POST to the MCP server (its own task)",
        ("StreamableHTTPTransport._handle_post_request",),
    ),
    (
        "  of which a new TCP connection (the SDK closes SSE answers early)",
        ("AsyncHTTPConnection._connect",),
    ),
    ("httpx2 requests to the MCP server (any task)", ("AsyncClient.send",)),
    ("anyio's library lookup (sniffio -> asyncio.current_task)", ("current_async_library",)),
    ("SQLAlchemy ORM, any stack (greenlets included)", profiling.SESSION),
)


async def profile_calls(pid: int, call: Call, seconds: float, out: Path) -> list[str]:
    """py-spy of `pid` while `call` runs in a loop for `seconds`: the summary lines."""
    # bench/workflows' summary reads its module's STEPS: these stand in for the run.
    with mock.patch.object(profiling, "STEPS", STEPS):
        lines = await profiling.profile_server(pid, call, seconds, out)
    return [lines[0].replace("execute-and-wait calls", "tool calls"), *lines[1:]]
