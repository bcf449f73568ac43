"""The tables a run prints: the time Maestrale adds to a tool call over the official MCP client
calling the same server, and tool calls per second under concurrent load."""

from __future__ import annotations

from bench.harness import Result, Tables

TARGET_ADDED_P50_MS = 3.0
TABLES = Tables(("maestrale", "mcp server", "client"))


def overhead_table(results: list[Result], rounds: int, warmup: int) -> list[str]:
    """One row per path; the first two are Maestrale's call endpoint and the direct client."""
    title = (
        f"One call of the tool echo, sequential (c=1), interleaved, {rounds} rounds after "
        f"{warmup} warm-up rounds (ms)"
    )
    return TABLES.latencies(title, results, TARGET_ADDED_P50_MS)


def throughput_table(results: list[tuple[int, Result]], seconds: float) -> list[str]:
    title = f"Tool calls under load, closed loop, {seconds:g} s per row"
    return TABLES.loops(title, results, "calls/s")
