"""What the benchmarks share: latencies and CPU per path (`Result`), the closed loop and the
interleaved rounds that drive calls, the tables they print, and a run's entry point."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.gateway.processes import BenchError, cpu_seconds, stop_process

Call = Callable[[int], Awaitable[None]]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of `values`; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


@dataclass
class Result:
    """One path's latencies (ms), errors, wall time and the CPU seconds of watched processes."""

    label: str
    latencies: list[float] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)  # the index of each successful call
    errors: int = 0
    first_error: str = ""
    seconds: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)

    def pct(self, q: float) -> float:
        return percentile(self.latencies, q)

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def cpu_ms(self, name: str) -> float:
        """CPU time of process `name` per successful call (ms)."""
        return self.cpu.get(name, 0.0) * 1000 / max(1, len(self.latencies))

    async def timed(self, call: Call, i: int) -> None:
        started = time.perf_counter()
        try:
            await call(i)
        except Exception as exc:  # counted, the first one reported
            self.errors += 1
            self.first_error = self.first_error or f"{type(exc).__name__}: {exc}"[:300]
            return
        self.latencies.append((time.perf_counter() - started) * 1000)
        self.rounds.append(i)


class CpuWatch:
    """CPU seconds (utime + stime) of named process trees between two points."""

    def __init__(self, pids: dict[str, list[int]]) -> None:
        self.pids = pids
        self.start = self.read()

    def read(self) -> dict[str, float]:
        return {name: cpu_seconds(pids) for name, pids in self.pids.items()}

    def since(self) -> dict[str, float]:
        now = self.read()
        return {name: now[name] - self.start[name] for name in now}


async def closed_loop(
    label: str, call: Call, concurrency: int, seconds: float, pids: dict[str, list[int]]
) -> Result:
    """`concurrency` callers in a loop for `seconds` (a call started before the end finishes)."""
    result = Result(label)
    counter = iter(range(10**9))
    end = time.perf_counter() + seconds

    async def caller() -> None:
        while time.perf_counter() < end:
            await result.timed(call, next(counter))

    watch = CpuWatch(pids)
    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    result.seconds = time.perf_counter() - started
    result.cpu = watch.since()
    return result


async def interleaved(
    calls: list[tuple[str, Call]],
    rounds: int,
    warmup: int,
    pids: dict[str, list[int]],
    meter: Callable[[], dict[str, float]] | None = None,
) -> list[Result]:
    """One call of each path per round, sequentially, the order rotated every round (so drift
    and order effects hit every path alike); `warmup` rounds first, not counted. The CPU of
    the watched processes (or the CPU seconds so far `meter` gives, by name, for work in
    short-lived processes) is charged to the path that was running."""
    results = [Result(label) for label, _ in calls]
    for i in range(warmup):
        for _, call in calls:
            await call(-i)
    for i in range(rounds):
        shift = i % len(calls)
        order = list(range(len(calls)))[shift:] + list(range(len(calls)))[:shift]
        for k in order:
            watch = CpuWatch(pids)
            before = meter() if meter is not None else {}
            await results[k].timed(calls[k][1], i)
            used = watch.since()
            if meter is not None:
                used = {name: spent - before.get(name, 0.0) for name, spent in meter().items()}
            for name, spent in used.items():
                results[k].cpu[name] = results[k].cpu.get(name, 0.0) + spent
    return results


def paired_median(a: Result, b: Result) -> float:
    """The median of the per-round differences a - b (rounds where both succeeded)."""
    mine = dict(zip(a.rounds, a.latencies, strict=True))
    diffs = [mine[i] - v for i, v in zip(b.rounds, b.latencies, strict=True) if i in mine]
    return percentile(diffs, 50)


@dataclass(frozen=True)
class Tables:
    """The tables of a run whose CPU columns are the processes `watched`."""

    watched: tuple[str, ...]
    width: int = 40  # of the path column

    @property
    def cpu_head(self) -> str:
        return "  CPU ms/call:" + "".join(f"{name:>11}" for name in self.watched)

    def _cpu(self, result: Result) -> str:
        return " " * 14 + "".join(f"{result.cpu_ms(name):>11.2f}" for name in self.watched)

    @staticmethod
    def errors(results: list[Result]) -> list[str]:
        return [
            f"  {r.label}: {r.errors} errors, the first: {r.first_error}"
            for r in results
            if r.errors
        ]

    def latencies(self, title: str, results: list[Result], target_ms: float) -> list[str]:
        """One row per path; the first two are Maestrale's and the peer's, compared."""
        maestrale, direct = results[:2]
        w = self.width
        head = (
            f"{'path':<{w}} {'calls':>5} {'p50':>6} {'p90':>6} {'p99':>6} {'mean':>6} {'max':>6}"
            f"{self.cpu_head}"
        )
        out = [title, head, "-" * len(head)]
        for r in results:
            mean = sum(r.latencies) / max(1, len(r.latencies))
            out.append(
                f"{r.label:<{w}} {len(r.latencies):>5} {r.pct(50):>6.2f} {r.pct(90):>6.2f} "
                f"{r.pct(99):>6.2f} {mean:>6.2f} {max(r.latencies, default=0):>6.1f}{self._cpu(r)}"
            )
        added = maestrale.pct(50) - direct.pct(50)
        verdict = "met" if added <= target_ms else "NOT met"
        out.append(
            f"added by Maestrale: p50 {added:+.2f} ms (target <= {target_ms:g} ms: "
            f"{verdict}), p90 {maestrale.pct(90) - direct.pct(90):+.2f}, "
            f"p99 {maestrale.pct(99) - direct.pct(99):+.2f}; "
            f"median of the paired differences {paired_median(maestrale, direct):+.2f}"
        )
        return out + self.errors(results)

    def loops(self, title: str, results: list[tuple[int, Result]], rate: str) -> list[str]:
        """One row per closed loop (its concurrency, its result); `rate` names the rate column."""
        w = self.width
        head = (
            f"{'path':<{w}} {'c':>3} {'calls':>6} {rate:>8} {'p50 ms':>7} {'p99 ms':>7} "
            f"{'errors':>6}{self.cpu_head}"
        )
        out = [title, head, "-" * len(head)]
        for concurrency, r in results:
            out.append(
                f"{r.label:<{w}} {concurrency:>3} {len(r.latencies):>6} {r.rate:>8.1f} "
                f"{r.pct(50):>7.2f} {r.pct(99):>7.2f} {r.errors:>6}{self._cpu(r)}"
            )
        return out + self.errors([r for _, r in results])


async def start_process(
    cmd: list[str], log: Path, what: str
) -> tuple[subprocess.Popen[bytes], str]:
    """Start a helper process of the run, which prints one line once it is ready; the process
    and that line (stderr goes to `log`, shown if it does not start within 60 s)."""
    with open(log, "wb") as err:
        proc = await asyncio.to_thread(subprocess.Popen, cmd, stdout=subprocess.PIPE, stderr=err)
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 60)
    except TimeoutError:
        line = b""
    if not line.strip():
        stop_process(proc, "")
        raise BenchError(f"{what} did not start: {log.read_text(errors='replace')[-2000:]}")
    return proc, line.decode().strip()


def _on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_main(
    run: Callable[[argparse.Namespace, Path], Coroutine[Any, Any, list[str]]],
    args: argparse.Namespace,
    prefix: str,
) -> int:
    """Run a benchmark (`run`, in a scratch directory) and print its tables; every process it
    started is stopped on error, Ctrl-C and SIGTERM."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    load0, started = os.getloadavg()[0], time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            lines = asyncio.run(run(args, Path(tmp)))
    except KeyboardInterrupt:
        print("\ninterrupted: every process started is stopped", file=sys.stderr)
        return 130
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print()
    print("\n".join(lines))
    print(
        f"load average (1 min) {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; "
        f"{time.monotonic() - started:.0f} s in all"
    )
    return 0
