"""The tables a run prints: starts per second, and execute-and-wait through Maestrale against
the same calls made straight to Temporal."""

from __future__ import annotations

from bench.workflows.load import Result, percentile

TARGET_ADDED_P50_MS = 5.0
WATCHED = ("maestrale", "temporal", "worker", "client")


CPU_HEAD = "  CPU ms/call:" + "".join(f"{name:>10}" for name in WATCHED)


def _cpu(result: Result) -> str:
    return " " * 14 + "".join(f"{result.cpu_ms(name):>10.2f}" for name in WATCHED)


def _errors(results: list[Result]) -> list[str]:
    return [
        f"  {r.label}: {r.errors} errors, the first: {r.first_error}" for r in results if r.errors
    ]


def starts_table(results: list[tuple[int, Result]], seconds: float) -> list[str]:
    head = (
        f"{'path':<28} {'c':>3} {'calls':>6} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'errors':>6}{CPU_HEAD}"
    )
    out = [f"Executions started (no wait), closed loop, {seconds:g} s per row", head]
    out.append("-" * len(head))
    for concurrency, r in results:
        out.append(
            f"{r.label:<28} {concurrency:>3} {len(r.latencies):>6} {r.rate:>7.1f} "
            f"{r.pct(50):>7.2f} {r.pct(99):>7.2f} {r.errors:>6}{_cpu(r)}"
        )
    return out + _errors([r for _, r in results])


def _paired(a: Result, b: Result) -> float:
    """The median of the per-round differences a - b (rounds where both succeeded)."""
    mine = dict(zip(a.rounds, a.latencies, strict=True))
    diffs = [mine[i] - v for i, v in zip(b.rounds, b.latencies, strict=True) if i in mine]
    return percentile(diffs, 50)


def wait_table(results: list[Result], rounds: int, warmup: int) -> list[str]:
    maestrale, direct = results
    head = (
        f"{'path':<42} {'calls':>5} {'p50':>6} {'p90':>6} {'p99':>6} {'mean':>6} {'max':>6}"
        f"{CPU_HEAD}"
    )
    out = [
        f"Execute-and-wait of the no-op workflow, sequential (c=1), interleaved, {rounds} rounds"
        f" after {warmup} warm-up rounds (ms)",
        head,
        "-" * len(head),
    ]
    for r in results:
        mean = sum(r.latencies) / max(1, len(r.latencies))
        out.append(
            f"{r.label:<42} {len(r.latencies):>5} {r.pct(50):>6.2f} {r.pct(90):>6.2f} "
            f"{r.pct(99):>6.2f} {mean:>6.2f} {max(r.latencies, default=0):>6.1f}"
            f"{_cpu(r)}"
        )
    added = maestrale.pct(50) - direct.pct(50)
    verdict = "met" if added <= TARGET_ADDED_P50_MS else "NOT met"
    out.append(
        f"added by Maestrale: p50 {added:+.2f} ms (target <= {TARGET_ADDED_P50_MS:g} ms: "
        f"{verdict}), p90 {maestrale.pct(90) - direct.pct(90):+.2f}, "
        f"p99 {maestrale.pct(99) - direct.pct(99):+.2f}; "
        f"median of the paired differences {_paired(maestrale, direct):+.2f}"
    )
    return out + _errors(results)
