"""The tables a run prints: the time Maestrale adds to a tool call over the official MCP client
calling the same server, and tool calls per second under concurrent load."""

from __future__ import annotations

from bench.workflows.load import Result
from bench.workflows.report import _paired as paired_median

TARGET_ADDED_P50_MS = 3.0
WATCHED = ("maestrale", "mcp server", "client")
CPU_HEAD = "  CPU ms/call:" + "".join(f"{name:>11}" for name in WATCHED)


def _cpu(result: Result) -> str:
    return " " * 14 + "".join(f"{result.cpu_ms(name):>11.2f}" for name in WATCHED)


def _errors(results: list[Result]) -> list[str]:
    return [
        f"  {r.label}: {r.errors} errors, the first: {r.first_error}" for r in results if r.errors
    ]


def overhead_table(results: list[Result], rounds: int, warmup: int) -> list[str]:
    """One row per path; the first two are Maestrale's call endpoint and the direct client."""
    maestrale, direct = results[:2]
    head = (
        f"{'path':<40} {'calls':>5} {'p50':>6} {'p90':>6} {'p99':>6} {'mean':>6} {'max':>6}"
        f"{CPU_HEAD}"
    )
    out = [
        f"One call of the tool echo, sequential (c=1), interleaved, {rounds} rounds after "
        f"{warmup} warm-up rounds (ms)",
        head,
        "-" * len(head),
    ]
    for r in results:
        mean = sum(r.latencies) / max(1, len(r.latencies))
        out.append(
            f"{r.label:<40} {len(r.latencies):>5} {r.pct(50):>6.2f} {r.pct(90):>6.2f} "
            f"{r.pct(99):>6.2f} {mean:>6.2f} {max(r.latencies, default=0):>6.1f}{_cpu(r)}"
        )
    added = maestrale.pct(50) - direct.pct(50)
    verdict = "met" if added <= TARGET_ADDED_P50_MS else "NOT met"
    out.append(
        f"added by Maestrale: p50 {added:+.2f} ms (target <= {TARGET_ADDED_P50_MS:g} ms: "
        f"{verdict}), p90 {maestrale.pct(90) - direct.pct(90):+.2f}, "
        f"p99 {maestrale.pct(99) - direct.pct(99):+.2f}; "
        f"median of the paired differences {paired_median(maestrale, direct):+.2f}"
    )
    return out + _errors(results)


def throughput_table(results: list[tuple[int, Result]], seconds: float) -> list[str]:
    head = (
        f"{'path':<40} {'c':>3} {'calls':>6} {'calls/s':>8} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'errors':>6}{CPU_HEAD}"
    )
    out = [f"Tool calls under load, closed loop, {seconds:g} s per row", head, "-" * len(head)]
    for concurrency, r in results:
        out.append(
            f"{r.label:<40} {concurrency:>3} {len(r.latencies):>6} {r.rate:>8.1f} "
            f"{r.pct(50):>7.2f} {r.pct(99):>7.2f} {r.errors:>6}{_cpu(r)}"
        )
    return out + _errors([r for _, r in results])
