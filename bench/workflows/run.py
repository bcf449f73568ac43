"""Workflows benchmark: executions started per second through Maestrale, and the time Maestrale
adds to an execute-and-wait over the same calls made straight to Temporal.

One run starts a Temporal dev server (the embedded one, `EmbeddedTemporal`, on a free port), a
plain temporalio worker process (`bench/workflows/worker.py`: the no-op workflow `noop`, which
returns its start payload at once) and `maestrale serve --no-worker` (one process, its own data
dir; SQLite, and with `--postgres URL` then a scratch Postgres database too, dropped at the end)
pointed at that Temporal with MAESTRALE_TEMPORAL_ADDRESS. The worker registers `noop` through
`POST /v1/workflows/register`. For each backend:

1. starts: `POST /v1/workflows/noop/execute` (no wait) in a closed loop at c=1 and c=16 for N
   seconds each, beside `client.start_workflow(...)` straight to Temporal (the same payload
   kind, `json/wf_v1`, and task queue): req/s, p50/p99, CPU per call of each process;
2. execute-and-wait, sequential: `{"wait_for_result": true}` through Maestrale against
   `start_workflow` + `handle.result()` straight to Temporal, interleaved round by round after
   a warm-up: p50/p90/p99 and the p50 difference (target: <= 5 ms);
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
from bench.workflows.servers import NAMESPACE, register, start_maestrale, start_worker
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
    label: str,
    db_url: str,
    home: Path,
    temporal: EmbeddedTemporal,
    worker: int,
    args: argparse.Namespace,
) -> list[str]:
    profile: Profile = args.profile_
    client = await Client.connect(temporal.address, namespace=NAMESPACE)
    proc, url = await start_maestrale(db_url, home, temporal.address)
    try:
        assert temporal.process is not None
        pids = {
            "maestrale": process_tree(proc.pid),
            "temporal": process_tree(temporal.process.pid),
            "worker": process_tree(worker),
            "client": [os.getpid()],
        }
        headers = {"Authorization": f"Bearer {API_KEY}"}
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(headers=headers, connector=connector) as http:
            await register(http, url, args.queue)
            paths = Paths(http, url, client, NAMESPACE, args.queue)
            print(f"[{label}] maestrale {url} (pid {proc.pid}); warm-up", flush=True)
            for i in range(profile.warmup):
                await paths.maestrale_wait(i)
                await paths.temporal_wait(i)
            starts = []
            for concurrency in (1, 16):
                for name, call in (
                    ("maestrale execute", paths.maestrale_start),
                    ("temporal start_workflow", paths.temporal_start),
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
                    ("temporal start + result", paths.temporal_wait),
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
        await asyncio.to_thread(stop_server, proc)


async def run(args: argparse.Namespace, tmp: Path) -> list[str]:
    temporal = EmbeddedTemporal(tmp, host="127.0.0.1", port=0, namespace=NAMESPACE)
    await temporal.start()
    databases = PostgresDatabases(args.postgres) if args.postgres else None
    worker: subprocess.Popen[bytes] | None = None
    try:
        worker = await start_worker(temporal.address, args.queue, tmp / "worker.log")
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
            lines += await bench_backend(label, db_url, tmp / label, temporal, worker.pid, args)
            lines.append("")
        return lines
    finally:
        if worker is not None:
            stop_process(worker, "")
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
