"""`--profile DIR`: py-spy of the Maestrale server during sequential direct tool calls (run and
summarized by bench/workflows/profiling.py), with the summary's steps those of a connector call."""

from __future__ import annotations

from pathlib import Path

from bench.workflows import profiling
from bench.workflows.load import Call

MCP_CONNECT = ("AsyncHTTPConnection._connect",)
# Steps of `POST /v1/connectors/{id}/tools/{tool}/call`, by function (qualified names as py-spy
# prints them); a step's share is the samples with one of them on the stack.
STEPS = (
    (
        "whole request (uvicorn run_asgi; the ORM's greenlets not included)",
        ("RequestResponseCycle.run_asgi",),
    ),
    ("  FastAPI route matching (_IncludedRouter._match)", ("_IncludedRouter._match",)),
    ("  auth + dependencies + body (solve_dependencies)", ("solve_dependencies",)),
    ("  ConnectorTools.call", ("ConnectorTools.call",)),
    ("    ConnectorService.row (read the connector)", ("ConnectorService.row",)),
    ("    ConnectorService.policy (activations)", ("ConnectorService.policy",)),
    ("    ConnectorService.endpoint (credentials)", ("ConnectorService.endpoint",)),
    ("    release (end of the transaction)", ("UnitOfWork.release", "UnitOfWork.commit")),
    ("    ConnectorRuntime.call (the MCP call, this task)", ("ConnectorRuntime.call",)),
    ("  sending the response (uvicorn send)", ("RequestResponseCycle.send",)),
    (
        "the SDK's POST of the request (its own task)",
        ("StreamableHTTPTransport._handle_post_request",),
    ),
    ("  of which a new TCP connection (each SSE answer is closed early)", MCP_CONNECT),
    ("httpx2 requests to the MCP server (any task)", ("AsyncClient.send",)),
    ("SQLAlchemy ORM, any stack (greenlets included)", profiling.SESSION),
)


def summarize(collapsed: str, calls: int) -> list[str]:
    """bench/workflows' summary (by package, by function), its steps replaced by these."""
    lines = profiling.summarize(collapsed, calls)
    rest = 1 + len(profiling.STEPS)  # its header, then its steps
    if len(lines) <= rest:
        return lines
    counts = [0] * len(STEPS)
    samples = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        names = {f.split(" (", 1)[0] for f in stack.split(";")}
        samples += int(count_text)
        for k, (_, functions) in enumerate(STEPS):
            if not names.isdisjoint(functions):
                counts[k] += int(count_text)
    ms = 1000 / profiling.RATE / max(1, calls)  # of one sample, per call
    steps = [
        f"    {n / max(1, samples) * 100:5.1f}% {n * ms:5.2f} ms  {label}"
        for (label, _), n in zip(STEPS, counts, strict=True)
    ]
    return [lines[0], *steps, *lines[rest:]]


async def profile_calls(pid: int, call: Call, seconds: float, out: Path) -> list[str]:
    lines = await profiling.profile_server(pid, call, seconds, out)
    if not out.exists():
        return lines
    head = lines[0].replace("execute-and-wait calls", "tool calls")
    calls = int(head.split()[0]) if head.split()[0].isdigit() else 0
    return [head, *summarize(out.read_text(), calls)]
