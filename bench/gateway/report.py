"""The results of a run: one row per target (JSON-ready), the table, and the targets checked."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.gateway.processes import CLK_TCK, Rss
from bench.gateway.targets import Target
from bench.gateway.wrk import WrkResult, percentile

P99_LIMIT_MS = 50.0  # a load step passes below this (--steps)
COARSE_TICKS = 20  # CPU figures from fewer ticks than this are marked as imprecise
# What Maestrale must do (issue 15); checked at the end of a run.
TARGET_ADDED_P50_MS = 1.0
TARGET_ADDED_P99_MS = 5.0
TARGET_C8_P99_MS = 20.0
TARGET_C8_MAX_MS = 50.0  # over a 15 s run (a full run)
TARGET_C64_P99_MS = 100.0
TARGET_RSS_MB = 150.0  # per process, under load, no local model
TARGET_RATE_RATIO = 5.0  # requests/s at c=8 against LiteLLM's with as many processes


@dataclass
class Sequential:
    requests: int = 0
    failed: int = 0
    cpu_s: float = 0.0
    hist: dict[int, int] = field(default_factory=dict)
    overheads: list[float] = field(default_factory=list)

    def add(self, r: WrkResult) -> None:
        self.requests += r.requests
        self.failed += r.failed
        self.cpu_s += r.cpu_s
        for v, c in r.hist:
            self.hist[v] = self.hist.get(v, 0) + c
        self.overheads.extend(r.overheads)

    def pct(self, q: float) -> float:
        return percentile(list(self.hist.items()), q)


@dataclass
class Step:
    concurrency: int
    result: WrkResult

    @property
    def ok(self) -> bool:
        return self.result.failed == 0 and self.result.p99_ms < P99_LIMIT_MS


@dataclass
class Report:
    target: Target
    scripts: tuple[Path, Path]
    sequential: Sequential = field(default_factory=Sequential)
    c8: WrkResult | None = None
    c64: WrkResult | None = None
    steps: list[Step] = field(default_factory=list)
    processes: int = 1
    rss_idle: Rss = field(default_factory=Rss)
    rss_load: Rss = field(default_factory=Rss)
    notes: list[str] = field(default_factory=list)

    def best(self) -> Step | None:
        ok = [s for s in self.steps if s.ok]
        return max(ok, key=lambda s: s.result.rate) if ok else None


def _per_req(seconds: float, requests: int) -> float | None:
    return seconds / requests * 1000 if requests else None


def _load(r: WrkResult | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "rps": r.rate,
        "p50_ms": r.p50_ms,
        "p99_ms": r.p99_ms,
        "max_ms": r.max_ms,
        "errors": r.failed,
        "seconds": r.seconds,
        "cpu_ms_per_req": _per_req(r.cpu_s, r.requests),
    }


def rows_of(reports: list[Report]) -> list[dict[str, Any]]:
    direct = next((r for r in reports if r.target.name == "direct"), None)
    base = direct.sequential if direct and direct.sequential.requests else None
    rows = []
    for rep in reports:
        seq = rep.sequential
        added50 = added99 = None
        if base is not None and rep is not direct and seq.requests:
            added50 = seq.pct(50) - base.pct(50)
            added99 = seq.pct(99) - base.pct(99)
        best, top = rep.best(), rep.steps[-1] if rep.steps else None
        rows.append(
            {
                "target": rep.target.name,
                "version": rep.target.version,
                "workers": rep.target.spec.workers,
                "processes": rep.processes,
                "c1_requests": seq.requests,
                "c1_failed": seq.failed,
                "c1_p50_ms": seq.pct(50) if seq.requests else None,
                "c1_p99_ms": seq.pct(99) if seq.requests else None,
                "added_p50_ms": added50,
                "added_p99_ms": added99,
                "cpu_ms_per_req_c1": _per_req(seq.cpu_s, seq.requests),
                "cpu_c1_coarse": seq.cpu_s * CLK_TCK < COARSE_TICKS,
                "self_reported_overhead_p50_ms": (
                    statistics.median(seq.overheads) if seq.overheads else None
                ),
                "c8": _load(rep.c8),
                "c64": _load(rep.c64),
                "rss_idle_mb": {
                    "max_process": rep.rss_idle.per_process,
                    "total": rep.rss_idle.total,
                },
                "rss_load_mb": {
                    "max_process": rep.rss_load.per_process,
                    "total": rep.rss_load.total,
                },
                "max_rate_rps": best.result.rate if best else None,
                "max_rate_concurrency": best.concurrency if best else None,
                "max_rate_capped": bool(best and top and top.ok),
                "steps": [
                    {"concurrency": s.concurrency, **(_load(s.result) or {})} for s in rep.steps
                ],
                "notes": rep.notes,
            }
        )
    return rows


def _f(x: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if x is None else fmt.format(x)


def print_table(rows: list[dict[str, Any]], pinned: str, c8_seconds: float) -> None:
    print()
    print(f"Gateway benchmark ({pinned}; load generator: wrk, closed loop)")
    head = (
        f"{'target':<20} {'proc':>4} {'+p50':>6} {'+p99':>6} {'req/s':>7} {'p99':>7} "
        f"{'worst':>7} {'CPU/req':>7} {'p99':>7} {'RSS idle':>10} {'RSS load':>10}"
    )
    units = (
        f"{'':<20} {'':>4} {'c=1':>6} {'c=1':>6} {'c=8':>7} {'c=8':>7} "
        f"{'c=8':>7} {'c=8':>7} {'c=64':>7} {'max/total':>10} {'max/total':>10}"
    )
    print(head)
    print(units)
    print("-" * len(head))
    for row in rows:
        c8, c64 = row["c8"] or {}, row["c64"] or {}
        idle, load = row["rss_idle_mb"], row["rss_load_mb"]
        print(
            f"{row['target']:<20} {row['processes']:>4} {_f(row['added_p50_ms']):>6} "
            f"{_f(row['added_p99_ms']):>6} {_f(c8.get('rps'), '{:.0f}'):>7} "
            f"{_f(c8.get('p99_ms'), '{:.1f}'):>7} {_f(c8.get('max_ms'), '{:.1f}'):>7} "
            f"{_f(c8.get('cpu_ms_per_req')):>7} {_f(c64.get('p99_ms'), '{:.1f}'):>7} "
            f"{idle['max_process']:>4.0f}/{idle['total']:<5.0f} "
            f"{load['max_process']:>4.0f}/{load['total']:<5.0f}"
        )
    print()
    print("  +p50/+p99: latency added to the direct call at the same percentile (concurrency 1)")
    print(f"  c=8: closed loop for {c8_seconds:g} s: requests/s, p99, the worst request (ms),")
    print("       server CPU time per request (ms, summed over its processes)")
    print("  RSS (MB): the largest process of the target / all its processes; idle = after")
    print("       start-up and one request, load = peak while measured at c=8 and c=64")
    for row in rows:
        extra = [f"version {row['version']}"] if row["version"] else []
        if row["self_reported_overhead_p50_ms"] is not None:
            extra.append(
                f"self-reported overhead p50 {row['self_reported_overhead_p50_ms']:.2f} ms"
            )
        if row["max_rate_rps"] is not None:
            capped = ">=" if row["max_rate_capped"] else ""
            extra.append(
                f"max rate {capped}{row['max_rate_rps']:.0f} req/s "
                f"(c={row['max_rate_concurrency']}, p99 < {P99_LIMIT_MS:g} ms)"
            )
        if row["c1_failed"]:
            extra.append(f"{row['c1_failed']} failed sequential requests")
        for load in ("c8", "c64"):
            if row[load] and row[load]["errors"]:
                extra.append(f"{row[load]['errors']} errors at {load.replace('c', 'c=')}")
        extra += row["notes"]
        if extra:
            print(f"  {row['target']}: " + "; ".join(extra))


_COMPARE = {
    "<=": lambda v, lim: v <= lim,
    "<": lambda v, lim: v < lim,
    ">=": lambda v, lim: v >= lim,
}


def check_targets(rows: list[dict[str, Any]], full_run: bool) -> None:
    """Maestrale's targets (issue 15), each Maestrale row against them."""
    by_name = {r["target"]: r for r in rows}
    print()
    print("Targets (Maestrale):")
    for row in rows:
        if not row["target"].startswith("maestrale"):
            continue
        c8, c64 = row["c8"] or {}, row["c64"] or {}
        checks: list[tuple[str, float | None, str, float]] = [
            ("added p50 c=1", row["added_p50_ms"], "<=", TARGET_ADDED_P50_MS),
            ("added p99 c=1", row["added_p99_ms"], "<=", TARGET_ADDED_P99_MS),
            ("p99 c=8", c8.get("p99_ms"), "<=", TARGET_C8_P99_MS),
        ]
        if full_run:
            checks.append(("worst c=8", c8.get("max_ms"), "<=", TARGET_C8_MAX_MS))
        checks.append(("p99 c=64", c64.get("p99_ms"), "<", TARGET_C64_P99_MS))
        checks.append(("RSS/process", row["rss_load_mb"]["max_process"], "<=", TARGET_RSS_MB))
        peer = by_name.get("litellm" + ("-x2" if row["workers"] > 1 else ""))
        if peer and peer["c8"] and peer["c8"]["rps"] and c8.get("rps"):
            ratio = c8["rps"] / peer["c8"]["rps"]
            checks.append((f"rate/{peer['target']}", ratio, ">=", TARGET_RATE_RATIO))
        parts = []
        for label, value, op, limit in checks:
            if value is None:
                parts.append(f"{label} -")
            else:
                verdict = "ok" if _COMPARE[op](value, limit) else "NOT met"
                parts.append(f"{label} {value:.2f} ({op}{limit:g}: {verdict})")
        print(f"  {row['target']}: " + ", ".join(parts))
    if not full_run:
        print("  (the worst request at c=8 is checked on a full run: 15 s at c=8)")
