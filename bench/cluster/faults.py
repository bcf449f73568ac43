"""Faults injected into the local cluster under a steady mixed load, with the issue's claims
asserted: per fault, the requests sent, failed, lost and duplicated, and the recovery time.

    .venv/bin/python -m bench.cluster.faults [--short] [--only NAME ...] [--keep]
        [--state-dir DIR [--attach]] [--limits-fail-open]

It starts its own cluster (deploy/local-cluster: Postgres, Redis, moto as S3, Temporal, 3 API
replicas and 2 workers behind HAProxy) in a fresh state dir, runs the scenarios in order and
stops it (`--keep` leaves it running; `--attach --state-dir DIR` uses the cluster `up` started
there, and leaves it running). The steady load is chat completions (the builtin engine,
30 ms each), stored conversations, file uploads and reads, from a few client loops through
HAProxy. Scenarios:

  steady           no fault: the baseline
  replica-kill     SIGKILL an API replica, restart it: only its in-flight requests fail, HAProxy
                   takes it out, nothing written is lost or duplicated
  replica-stop     SIGTERM an API replica (a rolling restart), start it again: no request fails
                   (not in --short, the CI test)
  worker-batch     SIGKILL the worker running a 10,000-line batch: every line written once
  worker-campaign  SIGKILL the worker running a campaign over the batch's events: each judged once
  postgres         pg_ctl stop -m fast for 10 s: clean 503s with Retry-After, no hung request,
                   full service within 5 s of its return, no accounting row lost
  redis            Redis stopped: limits fail closed (503 limits_unavailable) or open, recover
  limits           rate and spend limits across the replicas: within one request of the limit

The exit status is 1 when a claim fails (the table says which, and why).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
from sqlalchemy.exc import SQLAlchemyError

from bench.cluster import faults_api, faults_jobs
from bench.cluster.cluster import Cluster, Spec, terminate_on_signals, tools_missing
from bench.cluster.context import Bench
from bench.cluster.report import SHORT, FaultReport, Params, table
from bench.gateway.processes import BenchError

Scenario = Callable[[Bench], Awaitable[FaultReport]]
# name → (the scenario, whether the steady load runs meanwhile)
SCENARIOS: dict[str, tuple[Scenario, bool]] = {
    "steady": (faults_api.steady, True),
    "replica-kill": (faults_api.replica_kill, True),
    "replica-stop": (faults_api.replica_stop, True),
    "worker-batch": (faults_jobs.worker_kill_batch, True),
    "worker-campaign": (faults_jobs.worker_kill_campaign, True),
    "postgres": (faults_api.postgres_outage, True),
    "redis": (faults_api.redis_outage, True),
    "limits": (faults_api.limits, False),
}

# The CI test's (and --short's) scenarios: all but the graceful stop, whose restart of a replica
# (~30 s on a busy 2-core machine) the 3-minute budget cannot afford twice.
SHORT_SCENARIOS = [name for name in SCENARIOS if name != "replica-stop"]


async def run_scenario(bench: Bench, name: str) -> FaultReport:
    """Run a scenario (under the steady load if it takes one); one that breaks down is a
    report with a failed claim that says why."""
    scenario, loaded = SCENARIOS[name]
    started = time.monotonic()
    try:
        if not loaded:
            report = await scenario(bench)
        else:
            async with bench.loaded():
                report = await scenario(bench)
    except (BenchError, httpx.HTTPError, SQLAlchemyError, AssertionError, KeyError) as exc:
        report = FaultReport(name)
        report.claim("the scenario runs", False, f"{type(exc).__name__}: {exc}"[:500])
    report.seconds = time.monotonic() - started
    return report


@contextlib.asynccontextmanager
async def cluster_bench(
    state_dir: Path,
    spec: Spec,
    params: Params,
    say: Callable[[str], None] = lambda _: None,
    keep: bool = False,
    attach: bool = False,
) -> AsyncIterator[Bench]:
    """A cluster started on `state_dir` (or the one running there, with `attach`), and the
    bench's clients on it; stopped at the end unless `keep` or `attach`."""
    if attach:
        cluster, keep = Cluster.load(state_dir), True
    else:
        cluster = Cluster.create(state_dir, spec)
        await asyncio.to_thread(cluster.up, say)
    bench = Bench(cluster, params, secrets.token_hex(4))
    try:
        yield bench
    finally:
        await bench.close()
        if not keep:
            await asyncio.to_thread(cluster.down)


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def _main(args: argparse.Namespace) -> int:
    params = SHORT if args.short else Params()
    spec = Spec(port=0, limits_fail_open=args.limits_fail_open)
    missing = tools_missing(spec)
    if missing:
        raise BenchError("missing: " + "; ".join(missing))
    own = args.state_dir is None
    state = args.state_dir or Path(tempfile.mkdtemp(prefix="maestrale-cluster-"))
    names = args.only or (SHORT_SCENARIOS if args.short else list(SCENARIOS))
    reports: list[FaultReport] = []
    started = time.monotonic()
    try:
        async with cluster_bench(
            state, spec, params, _say, keep=args.keep, attach=args.attach
        ) as bench:
            _say(f"cluster up on {bench.cluster.url} (state {state})")
            for name in names:
                _say(f"-- {name}")
                report = await run_scenario(bench, name)
                reports.append(report)
                _say(
                    f"   sent {report.sent}, failed {report.failed}, lost {report.lost},"
                    f" duplicated {report.duplicated}: {'ok' if report.ok else 'FAILED'}"
                )
    finally:
        if own and not (args.keep or args.attach):
            shutil.rmtree(state, ignore_errors=True)
    if args.keep and not args.attach:
        _say(f"still running: deploy/local-cluster/down --state-dir {state}")
    _say("")
    for line in table(reports):
        _say(line)
    _say(f"{time.monotonic() - started:.0f} s in all")
    return 0 if all(r.ok for r in reports) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--short", action="store_true", help="the CI test's sizes")
    parser.add_argument("--only", nargs="+", choices=list(SCENARIOS), help="these scenarios")
    parser.add_argument("--state-dir", type=Path, help="the cluster's state (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="leave the cluster up at the end")
    parser.add_argument(
        "--attach", action="store_true", help="use the cluster running on --state-dir (`up`)"
    )
    parser.add_argument("--limits-fail-open", action="store_true", help="replicas fail open")
    args = parser.parse_args()
    terminate_on_signals()
    try:
        return asyncio.run(_main(args))
    except BenchError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: the cluster is stopped\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
