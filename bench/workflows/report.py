"""The tables a run prints: starts per second, and execute-and-wait through Maestrale against
the same calls made straight to Temporal."""

from __future__ import annotations

from bench.harness import Result, Tables

TARGET_ADDED_P50_MS = 5.0
TABLES = Tables(("maestrale", "temporal", "worker", "client"), width=42)


def starts_table(results: list[tuple[int, Result]], seconds: float) -> list[str]:
    title = f"Executions started (no wait), closed loop, {seconds:g} s per row"
    return TABLES.loops(title, results, "req/s")


def wait_table(results: list[Result], rounds: int, warmup: int) -> list[str]:
    title = (
        f"Execute-and-wait of the no-op workflow, sequential (c=1), interleaved, {rounds} rounds"
        f" after {warmup} warm-up rounds (ms)"
    )
    return TABLES.latencies(title, results, TARGET_ADDED_P50_MS)
