"""code_interpreter's sandbox: the wall time of a trivial run (bwrap's namespaces and mounts, the
launcher, the interpreter's start, the code, the report), target p50 and p95 <= 150 ms, beside
its peer, a plain `python -c pass` subprocess of the same interpreter (no sandbox at all).

    .venv/bin/python -m bench.libraries.sandbox [--runs 50] [--warmup 5] [--concurrency 4]

The paths run interleaved, one call of each per round (order rotated), so that the machine's
load hits them alike. CPU is this process's and its children's (the sandboxes are children),
per call. The last table runs trivial sandboxes `--concurrency` at a time, as parallel tool
calls would.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from pathlib import Path

from bench.gateway.processes import BenchError
from bench.harness import Call, Result, interleaved, run_main
from maestrale.tools.code.bwrap import SandboxUnavailable, find_bwrap, probe
from maestrale.tools.code.python_runtime import RuntimeNotFound, find_runtime
from maestrale.tools.code.runner import Sandbox, SandboxLimits

TARGET_MS = 150.0
LIMITS = SandboxLimits()


def cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def sandbox_call(sandbox: Sandbox, code: str, expected: str) -> Call:
    async def call(i: int) -> None:
        result = await sandbox.run(code, LIMITS)
        if result.failure or result.limits or result.exit_code != 0:
            raise BenchError(f"the run failed: {result.failure or result.limits} {result.stderr}")
        if result.stdout != expected:
            raise BenchError(f"unexpected output {result.stdout!r}")

    return call


def process_call(*argv: str) -> Call:
    async def call(i: int) -> None:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        await proc.communicate()
        if proc.returncode != 0:
            raise BenchError(f"{argv} exited with {proc.returncode}")

    return call


def table(title: str, results: list[Result]) -> list[str]:
    head = f"{'path':<44} {'runs':>5} {'p50':>7} {'p95':>7} {'p99':>7} {'max':>7} {'CPU ms':>7}"
    out = [title, head, "-" * len(head)]
    for r in results:
        out.append(
            f"{r.label:<44} {len(r.latencies):>5} {r.pct(50):>7.1f} {r.pct(95):>7.1f} "
            f"{r.pct(99):>7.1f} {max(r.latencies, default=0):>7.1f} {r.cpu_ms('all'):>7.1f}"
        )
        if r.errors:
            out.append(f"  {r.errors} errors, the first: {r.first_error}")
    return out


async def concurrent(sandbox: Sandbox, runs: int, concurrency: int) -> Result:
    """`runs` trivial sandboxes, `concurrency` at a time."""
    result = Result(f"trivial run, {concurrency} at a time")
    call = sandbox_call(sandbox, "print('ok')", "ok\n")
    counter = iter(range(runs))
    before, started = cpu_now(), time.perf_counter()

    async def worker() -> None:
        for i in counter:
            await result.timed(call, i)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    result.seconds = time.perf_counter() - started
    result.cpu["all"] = cpu_now() - before
    return result


async def run(args: argparse.Namespace, scratch: Path) -> list[str]:
    setup_started = time.perf_counter()
    try:
        bwrap = find_bwrap("bwrap", 65534)
        runtime = find_runtime(sys.executable, site_packages=True)
        probe(bwrap, runtime)
    except (SandboxUnavailable, RuntimeNotFound) as exc:
        raise BenchError(str(exc)) from exc
    setup_ms = (time.perf_counter() - setup_started) * 1000
    sandbox = Sandbox(bwrap, runtime)
    python = runtime.executable
    calls: list[tuple[str, Call]] = [
        ("sandbox: trivial run (print)", sandbox_call(sandbox, "print('ok')", "ok\n")),
        ("peer: python -c pass (subprocess)", process_call(sys.executable, "-c", "pass")),
        ("peer: python -I -S -c pass (subprocess)", process_call(python, "-I", "-S", "-c", "pass")),
        (
            "sandbox: import numpy",
            sandbox_call(sandbox, "import numpy\nprint('ok')", "ok\n"),
        ),
    ]
    if sandbox.cgroups is not None:  # what the run's cgroup costs: the same without one
        counted = Sandbox(bwrap, runtime, kernel_limits=False)
        label = "sandbox without cgroup: trivial run"
        calls.insert(1, (label, sandbox_call(counted, "print('ok')", "ok\n")))
    print(f"{args.runs} rounds of {len(calls)} paths ...", file=sys.stderr)
    results = await interleaved(calls, args.runs, args.warmup, {}, meter=lambda: {"all": cpu_now()})
    together = await concurrent(sandbox, args.runs, args.concurrency)
    mine, peer = results[0], results[2 if sandbox.cgroups is not None else 1]
    verdict = "met" if max(mine.pct(50), mine.pct(95)) <= TARGET_MS else "NOT met"
    version = ".".join(map(str, bwrap.version))
    as_uid = f", bwrap run as uid {bwrap.run_as}" if bwrap.run_as is not None else ""
    lines = [
        f"bubblewrap {version}{as_uid}; Python {runtime.version} at {python}; "
        f"site-packages bound: {bool(runtime.site_dirs)}; a cgroup per run: "
        + (f"v{sandbox.cgroups.version}" if sandbox.cgroups is not None else "none"),
        f"finding the runtime and probing the sandbox (once per process): {setup_ms:.0f} ms",
        "",
        *table("Wall time of one call (ms), sequential, interleaved", results),
        "",
        f"sandbox trivial run: p50 {mine.pct(50):.1f} ms, p95 {mine.pct(95):.1f} ms "
        f"(target <= {TARGET_MS:g} ms: {verdict}); over the plain subprocess: "
        f"p50 {mine.pct(50) - peer.pct(50):+.1f} ms",
        "",
        *table(f"{args.runs} trivial runs, {args.concurrency} at a time", [together]),
        f"throughput: {together.rate:.1f} runs/s",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="code_interpreter sandbox start-up benchmark")
    parser.add_argument("--runs", type=int, default=50, help="rounds (calls of each path)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=4)
    return run_main(run, parser.parse_args(argv), "maestrale-sandboxbench-")


if __name__ == "__main__":
    sys.exit(main())
