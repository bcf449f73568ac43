"""Workflows benchmark: executions started per second through Maestrale, and the time Maestrale
adds to an execute-and-wait over the same calls made straight to Temporal.

One run starts a Temporal dev server (the embedded one, `EmbeddedTemporal`, on a free port) and,
for each backend, `maestrale serve --no-worker` (one process, its own data dir; SQLite, and with
`--postgres URL` then a scratch Postgres database too, dropped at the end) pointed at that
Temporal with MAESTRALE_TEMPORAL_ADDRESS, and two plain temporalio worker processes
(`bench/workflows/worker.py`: the no-op workflow `noop`, which returns its start payload at
once) in the workspace's namespace: the deployment's, through Maestrale's worker proxy, and one
on a queue of its own straight to Temporal (the direct baseline). `noop` is registered through
`POST /v1/workflows/register`. For each backend:

1. starts: `POST /v1/workflows/noop/execute` (no wait) in a closed loop at c=1 and c=16 for N
   seconds each, beside `client.start_workflow(...)` straight to Temporal (the same payload
   kind, `json/wf_v1`, and task queue): req/s, p50/p99, CPU per call of each process;
2. execute-and-wait, sequential: `{"wait_for_result": true}` through Maestrale against
   `start_workflow` + `handle.result()` straight to Temporal (worker direct), and the same with
   the proxied worker, interleaved round by round after a warm-up: p50/p90/p99, the p50
   difference (target: <= 5 ms), and what the worker proxy adds (target: <= 5 ms too);
3. with `--profile DIR`: py-spy of the server during 10 s of execute-and-wait calls.

    .venv/bin/python -m bench.workflows.run [--quick] [--seconds S] [--rounds N]
        [--postgres URL] [--profile DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from temporalio.client import Client

from bench.gateway.processes import process_tree, stop_process
from bench.gateway.targets import PostgresDatabases
from bench.harness import closed_loop, interleaved, run_main
from bench.workflows.load import Paths, drain
from bench.workflows.profiling import profile_server
from bench.workflows.report import starts_table, wait_table
from bench.workflows.servers import NAMESPACE, register, start_maestrale, start_worker, whoami
from maestrale.workflows.temporal.devserver import EmbeddedTemporal, find_binary
from tests.support.app_fixtures import API_KEY
from tests.support.live import stop_server


@dataclass(frozen=True)
class Profile:
    seconds: float  # each closed-loop run of starts
    rounds: int  # execute-and-wait rounds (one call of each path per round)
    warmup: int


FULL = Profile(10, 400, 30)
QUICK = Profile(3, 60, 10)


async def bench_backend(
    label: str, db_url: str, home: Path, temporal: EmbeddedTemporal, args: argparse.Namespace
) -> list[str]:
    profile: Profile = args.profile_
    proc, url = await start_maestrale(db_url, home, temporal.address)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(headers=headers, connector=connector) as http:
            who = await whoami(http, url)
            namespace = who["namespace"]
            client = await Client.connect(temporal.address, namespace=namespace)
            # The deployment's worker dials the worker proxy, as workers do; a second one, on a
            # queue of its own, dials Temporal itself: the direct baseline.
            workers.append(
                await start_worker(who["scheduler_url"], namespace, args.queue,
                                   home / "worker-proxied.log", API_KEY)
            )  # fmt: skip
            direct_queue = f"{args.queue}-direct"
            workers.append(
                await start_worker(
                    temporal.address, namespace, direct_queue, home / "worker-direct.log"
                )
            )
            assert temporal.process is not None
            pids = {
                "maestrale": process_tree(proc.pid),
                "temporal": process_tree(temporal.process.pid),
                "worker": [pid for w in workers for pid in process_tree(w.pid)],
                "client": [os.getpid()],
            }
            await register(http, url, args.queue)
            paths = Paths(http, url, client, namespace, args.queue)
            direct = Paths(http, url, client, namespace, direct_queue)
            print(f"[{label}] maestrale {url} (pid {proc.pid}); warm-up", flush=True)
            for i in range(profile.warmup):
                await paths.maestrale_wait(i)
                await direct.temporal_wait(i)
                await paths.temporal_wait(i)
            starts = []
            for concurrency in (1, 16):
                for name, call in (
                    ("maestrale execute", paths.maestrale_start),
                    ("temporal start_workflow", direct.temporal_start),
                ):
                    r = await closed_loop(name, call, concurrency, profile.seconds, pids)
                    left = await drain(client)
                    print(
                        f"[{label}] {name} c={concurrency}: {r.rate:.1f} req/s"
                        + (f" ({left} executions still running)" if left else ""),
                        flush=True,
                    )
                    starts.append((concurrency, r))
            print(f"[{label}] execute-and-wait: {profile.rounds} interleaved rounds", flush=True)
            waits = await interleaved(
                [
                    ("maestrale execute wait_for_result", paths.maestrale_wait),
                    ("temporal start + result", direct.temporal_wait),
                    ("temporal start + result, worker proxied", paths.temporal_wait),
                ],
                profile.rounds,
                profile.warmup,
                pids,
            )
            lines = [f"== {label} ==", *starts_table(starts, profile.seconds), ""]
            lines += wait_table(waits, profile.rounds, profile.warmup)
            if args.profile is not None:
                out = args.profile / f"maestrale-{label}.collapsed"
                print(f"[{label}] py-spy for {args.profile_seconds:g} s", flush=True)
                lines.append("py-spy of the server during sequential execute-and-wait calls:")
                lines += await profile_server(
                    proc.pid, paths.maestrale_wait, args.profile_seconds, out
                )
            return lines
    finally:
        for worker in workers:
            stop_process(worker, "")
        await asyncio.to_thread(stop_server, proc)


async def run(args: argparse.Namespace, tmp: Path) -> list[str]:
    temporal = EmbeddedTemporal(tmp, host="127.0.0.1", port=0, namespace=NAMESPACE)
    await temporal.start()
    databases = PostgresDatabases(args.postgres) if args.postgres else None
    try:
        binary = find_binary() or "temporal"
        version = await asyncio.to_thread(
            subprocess.run, [binary, "--version"], capture_output=True, text=True
        )
        lines = [
            f"Workflows benchmark: {version.stdout.strip()}, {os.cpu_count()} CPUs, "
            f"no CPU pinning, task queue {args.queue}",
            "",
        ]
        backends = [("sqlite", f"sqlite+aiosqlite:///{tmp}/sqlite/maestrale.db")]
        if databases is not None:
            backends.append(("postgres", await asyncio.to_thread(databases.create)))
        for label, db_url in backends:
            lines += await bench_backend(label, db_url, tmp / label, temporal, args)
            lines.append("")
        return lines
    finally:
        await temporal.stop()
        if databases is not None:
            await asyncio.to_thread(databases.drop_all)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Maestrale workflows benchmark")
    parser.add_argument("--quick", action="store_true", help="a short run (about a minute)")
    parser.add_argument("--seconds", type=float, help="duration of each run of starts")
    parser.add_argument("--rounds", type=int, help="execute-and-wait rounds")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="also run on Postgres, in a scratch database made on this server "
        "(e.g. postgresql+asyncpg://postgres@127.0.0.1:5432/test)",
    )
    parser.add_argument("--profile", type=Path, metavar="DIR", help="py-spy of the server")
    parser.add_argument("--profile-seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    base = QUICK if args.quick else FULL
    args.profile_ = Profile(args.seconds or base.seconds, args.rounds or base.rounds, base.warmup)
    args.queue = f"bench-noop-{uuid.uuid4().hex[:8]}"
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if find_binary() is None:
        print("error: the `temporal` CLI is missing: install maestrale[workflows]", file=sys.stderr)
        return 2
    return run_main(run, args, "maestrale-wfbench-")


if __name__ == "__main__":
    sys.exit(main())
