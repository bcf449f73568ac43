"""The tables a run prints: starts per second, and execute-and-wait through Maestrale against
the same calls made straight to Temporal."""

from __future__ import annotations

from bench.harness import Result, Tables, paired_median

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
    lines = TABLES.latencies(title, results, TARGET_ADDED_P50_MS)
    if len(results) > 2:  # the worker proxy: the direct path again, its worker through the proxy
        direct, proxied = results[1], results[2]
        added = proxied.pct(50) - direct.pct(50)
        verdict = "met" if added <= TARGET_ADDED_P50_MS else "NOT met"
        lines.append(
            f"added by the worker proxy: p50 {added:+.2f} ms (target <= {TARGET_ADDED_P50_MS:g}"
            f" ms: {verdict}), p90 {proxied.pct(90) - direct.pct(90):+.2f}, p99"
            f" {proxied.pct(99) - direct.pct(99):+.2f}; median of the paired differences"
            f" {paired_median(proxied, direct):+.2f}"
        )
    return lines
