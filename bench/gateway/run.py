"""Gateway benchmark: chat completions through Maestrale vs LiteLLM vs the upstream directly.

One run starts an instant OpenAI-compatible stub upstream and, routing `stub-model` to it,
Maestrale (`maestrale serve --no-worker`, engine `openai_compat`) on SQLite and on Postgres (a
fresh database each, dropped at the end), each with one and with two server processes, and
LiteLLM's proxy (its own venv, no database) with one and with two workers. For each target:

* concurrency 1: N sequential requests in interleaved rounds (direct, Maestrale, LiteLLM,
  direct, ...) so that noise from the rest of the machine hits all targets alike → the latency
  ADDED to the direct call at p50 and p99;
* concurrency 8 for 15 s (closed loop): requests/s, p99 and the worst request, CPU per request;
* concurrency 64: p99;
* RSS per process (the largest, and all of the target's processes): idle after start-up, and
  the peak under load;
* with `--steps`, closed-loop steps at concurrency 1, 2, 4, ...: the highest rate with p99 <
  50 ms.

The load generator is wrk (C, epoll; POST bodies through a Lua script): `apt-get install -y wrk`.
With two CPUs or more a one-process gateway is pinned to the first CPU and the stub, wrk and this
script to the others; a gateway of two processes gets every CPU (it needs both).

    .venv/bin/python -m bench.gateway.run [--quick] [--targets NAMES] [--json FILE]
        [--profile DIR] [--maestrale-src DIR] [--compare-src DIR] [--steps] [--setup-only]

See bench/gateway/README.md for what each figure means and why wrk.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from bench.gateway.processes import (
    BenchError,
    Processes,
    RssSampler,
    busy_cpu_seconds,
    children_cpu_seconds,
    cpu_seconds,
    process_tree,
    rss_of,
)
from bench.gateway.profiling import profile_maestrale
from bench.gateway.report import Report, Step, check_targets, print_table, rows_of
from bench.gateway.targets import (
    DEFAULT_POSTGRES,
    Pending,
    PostgresDatabases,
    Spec,
    direct_target,
    ensure_litellm_venv,
    launch_litellm,
    launch_maestrale,
    maestrale_has_workers,
    migrate_maestrale,
    specs,
    start_stub,
    wait_ready,
)
from bench.gateway.wrk import run_wrk, write_scripts

GROUPS = {"maestrale", "litellm", "base", "otel"}


@dataclass(frozen=True)
class Profile:
    requests: int  # concurrency-1 requests per target, split over `rounds`
    rounds: int
    warmup_seconds: float
    c8_seconds: float
    c64_seconds: float
    step_seconds: float  # --steps
    max_concurrency: int  # --steps
    budget_seconds: float  # the whole measurement (start-up included, venv creation excluded)


FULL = Profile(2000, 5, 3, 15, 5, 5, 256, 540)
QUICK = Profile(300, 2, 1, 4, 2, 2, 128, 115)


class Clock:
    def __init__(self, budget: float) -> None:
        self.end = time.monotonic() + budget

    def left(self) -> float:
        return self.end - time.monotonic()


def measure(reports: list[Report], profile: Profile, clock: Clock, steps: bool) -> None:
    for rep in reports:  # warm-up: connection pools, caches, lazy imports, JIT-less first calls
        run_wrk(rep.target, rep.scripts[1], 8, profile.warmup_seconds)

    per_round = max(1, profile.requests // profile.rounds)
    print(f"concurrency 1: {profile.rounds} rounds x {per_round} requests per target")
    for i in range(profile.rounds):
        order = reports[i % len(reports) :] + reports[: i % len(reports)]
        for rep in order:
            if clock.left() < 30:
                rep.notes.append("time budget: fewer sequential requests")
                continue
            r = run_wrk(rep.target, rep.scripts[0], 1, min(120, clock.left() - 20), per_round)
            rep.sequential.add(r)

    for concurrency, seconds in ((8, profile.c8_seconds), (64, profile.c64_seconds)):
        print(f"concurrency {concurrency}: {seconds:g} s per target")
        for rep in reports:
            if clock.left() < seconds + 10:
                rep.notes.append(f"time budget: no c={concurrency} measurement")
                continue
            with RssSampler(rep.target.proc.pid) as rss:
                r = run_wrk(rep.target, rep.scripts[1], concurrency, seconds)
            rep.rss_load.grow(rss.peak)
            setattr(rep, f"c{concurrency}", r)
            print(
                f"  {rep.target.name:<20} {r.rate:8.0f} req/s  p50 {r.p50_ms:7.2f} ms  "
                f"p99 {r.p99_ms:7.2f} ms  worst {r.max_ms:7.1f} ms"
                + (f"  errors {r.errors}" if r.failed else "")
            )
    if steps:
        load_steps(reports, profile, clock)


def load_steps(reports: list[Report], profile: Profile, clock: Clock) -> None:
    print(f"load steps: {profile.step_seconds:g} s each, until p99 >= 50 ms")
    active = list(reports)
    concurrency = 1
    while active and concurrency <= profile.max_concurrency:
        for rep in list(active):
            if clock.left() < profile.step_seconds + 15:
                rep.notes.append("time budget: load steps stopped early")
                active.remove(rep)
                continue
            with RssSampler(rep.target.proc.pid) as rss:
                r = run_wrk(rep.target, rep.scripts[1], concurrency, profile.step_seconds)
            rep.rss_load.grow(rss.peak)
            step = Step(concurrency, r)
            rep.steps.append(step)
            print(
                f"  {rep.target.name:<20} c={concurrency:<4} {r.rate:8.0f} req/s  "
                f"p99 {r.p99_ms:7.2f} ms" + (f"  errors {r.errors}" if r.failed else "")
            )
            if not step.ok:
                active.remove(rep)
        concurrency *= 2


def _select(names: list[str], compare_src: Path | None) -> list[Spec]:
    chosen = []
    for spec in specs(compare_src):
        group = spec.name.split("-", 1)[0]
        if spec.name in names or group in names or spec.name == "direct":
            chosen.append(spec)
    return chosen


def start_targets(
    chosen: list[Spec],
    tmp: Path,
    procs: Processes,
    databases: PostgresDatabases,
    gateway_cpus: set[int] | None,
    maestrale_src: Path | None,
) -> tuple[list[Report], list[str]]:
    """Migrate every Maestrale database, launch every target, then wait for each (start-ups
    overlap): the reports of the targets that answer, and the reasons of those skipped."""
    stub, stub_port = start_stub(tmp, procs)
    skipped: list[str] = []
    workers_of: dict[Path | None, bool] = {}
    ready: list[tuple[Spec, str | None]] = []  # Maestrale targets, their database
    migrations = []
    for spec in chosen:
        if spec.kind != "maestrale":
            continue
        spec = replace(spec, src=spec.src or maestrale_src)
        try:
            if spec.src not in workers_of:
                workers_of[spec.src] = maestrale_has_workers(spec.src)
            if spec.workers > 1 and not workers_of[spec.src]:
                raise BenchError("this Maestrale's `serve` has no --workers option")
            url = databases.create() if spec.backend == "postgres" else None
        except BenchError as exc:
            skipped.append(f"{spec.name}: {exc}")
            continue
        migrations.append((spec, url, migrate_maestrale(spec, tmp, url)))
    for spec, url, proc in migrations:
        if proc.wait(timeout=300) != 0:
            log = (tmp / spec.name / "migrate.log").read_text(errors="replace")
            skipped.append(f"{spec.name}: `maestrale migrate` failed: {log[-2000:]}")
        else:
            ready.append((spec, url))

    launched: list[Pending | Report] = []
    for spec in chosen:
        cpus = gateway_cpus if spec.pinned else None
        if spec.kind == "direct":
            target = direct_target(stub, stub_port)
            launched.append(Report(target, write_scripts(target, tmp)))
        elif spec.kind == "litellm":
            try:
                launched.append(launch_litellm(spec, tmp, stub_port, procs, cpus))
            except BenchError as exc:
                skipped.append(f"{spec.name}: {exc}")
        else:
            for prepared, url in ready:
                if prepared.name == spec.name:
                    has_workers = workers_of[prepared.src]
                    launched.append(
                        launch_maestrale(prepared, tmp, stub_port, procs, cpus, url, has_workers)
                    )
    reports = []
    for item in launched:
        if isinstance(item, Report):
            reports.append(item)
            continue
        try:
            target = wait_ready(item)
        except BenchError as exc:
            skipped.append(f"{item.target.name}: {exc}")
            continue
        reports.append(Report(target, write_scripts(target, tmp)))
    time.sleep(1)  # settle: what a request allocated on the way, before the idle RSS
    for rep in reports:
        rep.processes = len(process_tree(rep.target.proc.pid))
        rep.rss_idle = rss_of(rep.target.proc.pid)
        print(f"{rep.target.name}: {rep.target.url} (pid {rep.target.proc.pid})")
    return reports, skipped


def _on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Maestrale vs LiteLLM gateway benchmark")
    parser.add_argument("--quick", action="store_true", help="short run (under 2 minutes)")
    parser.add_argument("--requests", type=int, help="concurrency-1 requests per target")
    parser.add_argument("--c8-seconds", type=float, help="duration of the concurrency-8 run")
    parser.add_argument(
        "--targets",
        default="maestrale,litellm",
        help="comma-separated target names or groups: maestrale (maestrale-sqlite, "
        "maestrale-sqlite-x2, maestrale-pg, maestrale-pg-x2), litellm (litellm, litellm-x2), "
        "otel (otel-sqlite, otel-pg: tracing on), base (with --compare-src); direct is always "
        "measured",
    )
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("MAESTRALE_TEST_POSTGRES_URL", DEFAULT_POSTGRES),
        help="a Postgres server where the run may create and drop databases",
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    parser.add_argument("--steps", action="store_true", help="also step the load up (max rate)")
    parser.add_argument("--step-seconds", type=float, help="duration of each load step")
    parser.add_argument("--max-concurrency", type=int, help="last load step")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    parser.add_argument(
        "--profile", type=Path, metavar="DIR", help="py-spy profile of Maestrale under load"
    )
    parser.add_argument(
        "--maestrale-src",
        type=Path,
        metavar="DIR",
        help="run the Maestrale server from this source dir (e.g. a `git archive` of a commit)",
    )
    parser.add_argument(
        "--compare-src",
        type=Path,
        metavar="DIR",
        help="also measure Maestrale from this source dir (targets base-sqlite, base-pg)",
    )
    parser.add_argument(
        "--setup-only", action="store_true", help="create LiteLLM's venv if absent, then exit"
    )
    args = parser.parse_args(argv)
    args.names = [n.strip() for n in args.targets.split(",") if n.strip()]
    if args.compare_src is not None and "base" not in args.names:
        args.names.append("base")
    known = {s.name for s in specs(Path("."))} | GROUPS
    unknown = set(args.names) - known
    if unknown:
        parser.error(f"unknown targets: {', '.join(sorted(unknown))}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    base = QUICK if args.quick else FULL
    profile = replace(
        base,
        requests=args.requests or base.requests,
        c8_seconds=args.c8_seconds or base.c8_seconds,
        step_seconds=args.step_seconds or base.step_seconds,
        max_concurrency=args.max_concurrency or base.max_concurrency,
    )
    chosen = _select(args.names, args.compare_src)

    if shutil.which("wrk") is None:
        print(
            "error: this benchmark needs the wrk load generator on PATH "
            "(Debian/Ubuntu: apt-get install -y wrk; macOS: brew install wrk)",
            file=sys.stderr,
        )
        return 2
    skipped: list[str] = []
    if any(s.kind == "litellm" for s in chosen) or args.setup_only:
        try:
            ensure_litellm_venv()
        except (BenchError, subprocess.SubprocessError, OSError) as exc:
            if args.setup_only:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            skipped += [f"{s.name}: {exc}" for s in chosen if s.kind == "litellm"]
            chosen = [s for s in chosen if s.kind != "litellm"]
    if args.setup_only:
        return 0

    cpus = sorted(os.sched_getaffinity(0))
    gateway_cpus: set[int] | None = None
    if len(cpus) >= 2 and not args.no_pin:
        gateway_cpus = {cpus[0]}
        os.sched_setaffinity(0, set(cpus[1:]))  # stub, wrk and this script
        pinned = (
            f"one-process gateways on CPU {cpus[0]}, stub + wrk on CPU "
            f"{','.join(map(str, cpus[1:]))}; two-process gateways on every CPU"
        )
    else:
        pinned = "no CPU pinning"

    signal.signal(signal.SIGTERM, _on_sigterm)
    procs = Processes()
    databases = PostgresDatabases(args.postgres_url)
    clock = Clock(profile.budget_seconds)
    status = 0
    try:
        with tempfile.TemporaryDirectory(prefix="maestrale-gwbench-") as tmp_name:
            tmp = Path(tmp_name)
            reports, failed = start_targets(
                chosen, tmp, procs, databases, gateway_cpus, args.maestrale_src
            )
            skipped += failed
            for reason in skipped:
                print(f"skipping {reason}", file=sys.stderr)
                status = 1
            busy0, ours0 = busy_cpu_seconds(), _our_cpu(reports)
            wall0 = time.monotonic()
            measure(reports, profile, clock, args.steps)
            foreign = (busy_cpu_seconds() - busy0) - (_our_cpu(reports) - ours0)
            foreign_cores = max(0.0, foreign / (time.monotonic() - wall0))
            rows = rows_of(reports)
            print_table(rows, pinned, profile.c8_seconds)
            if any(rep.target.spec.traced for rep in reports):
                print(f"\nspans exported to the OTLP endpoint: {_exported(reports)}")
            for reason in skipped:
                lines = [line for line in reason.splitlines() if line.strip()]
                last = f" ... {lines[-1][:200]}" if len(lines) > 1 else ""
                print(f"  skipped {lines[0][:200]}{last}")
            check_targets(rows, full_run=profile.c8_seconds >= 15)
            if foreign_cores > 0.1:
                print(
                    f"\nWARNING: other processes used {foreign_cores:.2f} cores on average during "
                    "the measurement; figures are noisier than on an idle machine."
                )
            if args.json:
                summary: dict[str, Any] = {
                    "rows": rows,
                    "skipped": skipped,
                    "foreign_cores": foreign_cores,
                    "pinning": pinned,
                }
                args.json.write_text(json.dumps(summary, indent=2))
                print(f"\nresults written to {args.json}")
            profiled = next((r for r in reports if r.target.spec.kind == "maestrale"), None)
            if args.profile and profiled:
                profile_maestrale(
                    profiled.target, profiled.scripts[1], profile.c64_seconds * 2, args.profile
                )
    except KeyboardInterrupt:
        print("\ninterrupted: stopping every process started", file=sys.stderr)
        status = 130
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        status = 2
    finally:
        procs.stop_all()
        databases.drop_all()
    return status


def _exported(reports: list[Report]) -> str:
    """What the traced targets sent to the stub's OTLP endpoint."""
    direct = next(rep for rep in reports if rep.target.spec.kind == "direct")
    stats_url = direct.target.url.replace("/v1/chat/completions", "/stub/traces")
    try:
        stats = httpx.get(stats_url, timeout=5).json()
    except httpx.HTTPError as exc:
        return f"unknown ({exc})"
    return f"{stats['spans']} spans in {stats['exports']} exports"


def _our_cpu(reports: list[Report]) -> float:
    """CPU of the stub, the gateways, wrk and this script (to tell other processes' load)."""
    pids = {p for rep in reports for p in process_tree(rep.target.proc.pid)}
    own = resource.getrusage(resource.RUSAGE_SELF)
    return cpu_seconds(sorted(pids)) + children_cpu_seconds() + own.ru_utime + own.ru_stime


if __name__ == "__main__":
    sys.exit(main())
