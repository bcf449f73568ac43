"""Connectors benchmark: the time Maestrale adds to a tool call of an MCP server over the official
`mcp` client calling the same server, and tool calls per second with 50 concurrent conversations.

One run starts the MCP tool server (`bench/connectors/mcp_server.py`: the connector tests' tools
over streamable HTTP, uvicorn, a process of its own) and `maestrale serve --no-worker` (one
process, its own data dir, private addresses allowed for connectors; SQLite, and with
`--postgres URL` then a scratch Postgres database too, dropped at the end), and creates the
connector `bench-tools` on that server. For each backend:

1. overhead, sequential: `POST /v1/connectors/bench-tools/tools/echo/call` (aiohttp, keep-alive)
   against `ClientSession.call_tool("echo", ...)` straight to the server (one session kept open),
   and a conversation turn of `maestrale-echo` that calls `echo` (store true, then false), one
   call of each per round, interleaved after a warm-up: p50/p90/p99, CPU per call, and the p50
   difference of the first two (target: <= 3 ms);
2. throughput: 50 closed-loop callers for S seconds each of `POST /v1/conversations` with the
   connector's tools (store true, then false; each answer must hold the `tool.execution` entry
   of `echo`), of the direct call endpoint, and of the official client (one shared session):
   calls per second, p50/p99, errors, CPU per call;
3. with `--profile DIR`: py-spy of the server during sequential direct calls.

    .venv/bin/python -m bench.connectors.run [--quick] [--rounds N] [--seconds S]
        [--postgres URL] [--profile DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench.connectors.load import Paths, mcp_session
from bench.connectors.profiling import profile_calls
from bench.connectors.report import overhead_table, throughput_table
from bench.connectors.servers import create_connector, start_maestrale, start_mcp_server
from bench.gateway.processes import process_tree, stop_process
from bench.gateway.targets import PostgresDatabases
from bench.harness import Result, closed_loop, interleaved, run_main
from tests.support.app_fixtures import API_KEY
from tests.support.live import stop_server

CONNECTOR = "bench-tools"
CONCURRENCY = 50


@dataclass(frozen=True)
class Profile:
    seconds: float  # each closed-loop row of the throughput table
    rounds: int  # sequential rounds (one call of each path per round)
    warmup: int


FULL = Profile(10, 1000, 50)
QUICK = Profile(3, 150, 20)


async def bench_backend(
    label: str,
    db_url: str,
    tmp: Path,
    mcp: subprocess.Popen[bytes],
    mcp_url: str,
    args: argparse.Namespace,
) -> list[str]:
    profile: Profile = args.profile_
    proc, url = await start_maestrale(db_url, tmp, label)
    try:
        pids = {
            "maestrale": process_tree(proc.pid),
            "mcp server": process_tree(mcp.pid),
            "client": [os.getpid()],
        }
        headers = {"Authorization": f"Bearer {API_KEY}"}
        connector = aiohttp.TCPConnector(limit=0)
        async with (
            aiohttp.ClientSession(headers=headers, connector=connector) as http,
            mcp_session(mcp_url) as session,
        ):
            await create_connector(http, url, CONNECTOR, mcp_url)
            paths = Paths(http, url, CONNECTOR, session)
            print(f"[{label}] maestrale {url} (pid {proc.pid}); sequential rounds", flush=True)
            calls = [
                ("maestrale POST .../tools/echo/call", paths.maestrale_call),
                ("mcp ClientSession.call_tool (direct)", paths.direct_call),
                ("conversation, store=true", paths.conversation(True)),
                ("conversation, store=false", paths.conversation(False)),
            ]
            sequential = await interleaved(calls, profile.rounds, profile.warmup, pids)
            loads: list[tuple[int, Result]] = []
            # The conversations first: 50 concurrent ones is the load the issue asks about.
            for name, call in [*calls[2:], *calls[:2]]:
                r = await closed_loop(name, call, CONCURRENCY, profile.seconds, pids)
                print(f"[{label}] {name} c={CONCURRENCY}: {r.rate:.1f} calls/s", flush=True)
                loads.append((CONCURRENCY, r))
            lines = [f"== {label} ==", *overhead_table(sequential, profile.rounds, profile.warmup)]
            lines += ["", *throughput_table(loads, profile.seconds)]
            if args.profile is not None:
                out = args.profile / f"maestrale-{label}.collapsed"
                print(f"[{label}] py-spy for {args.profile_seconds:g} s", flush=True)
                lines.append("py-spy of the server during sequential direct tool calls:")
                lines += await profile_calls(
                    proc.pid, paths.maestrale_call, args.profile_seconds, out
                )
            return lines
    finally:
        await asyncio.to_thread(stop_server, proc)


async def run(args: argparse.Namespace, tmp: Path) -> list[str]:
    databases = PostgresDatabases(args.postgres) if args.postgres else None
    mcp: subprocess.Popen[bytes] | None = None
    try:
        mcp, mcp_url = await start_mcp_server(tmp / "mcp-server.log")
        lines = [
            f"Connectors benchmark: MCP server {mcp_url} (pid {mcp.pid}), {os.cpu_count()} CPUs, "
            "no CPU pinning",
            "",
        ]
        backends = [("sqlite", f"sqlite+aiosqlite:///{tmp}/sqlite/maestrale.db")]
        if databases is not None:
            backends.append(("postgres", await asyncio.to_thread(databases.create)))
        for label, db_url in backends:
            lines += await bench_backend(label, db_url, tmp, mcp, mcp_url, args)
            lines.append("")
        return lines
    finally:
        if mcp is not None:
            stop_process(mcp, "")
        if databases is not None:
            await asyncio.to_thread(databases.drop_all)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Maestrale connectors benchmark")
    parser.add_argument("--quick", action="store_true", help="a short run (under a minute)")
    parser.add_argument("--seconds", type=float, help="duration of each throughput row")
    parser.add_argument("--rounds", type=int, help="sequential rounds of the overhead table")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="also run on Postgres, in a scratch database made on this server "
        "(e.g. postgresql://postgres@127.0.0.1:5432/test)",
    )
    parser.add_argument("--profile", type=Path, metavar="DIR", help="py-spy of the server")
    parser.add_argument("--profile-seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    base = QUICK if args.quick else FULL
    args.profile_ = Profile(args.seconds or base.seconds, args.rounds or base.rounds, base.warmup)
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    return run_main(run, args, "maestrale-cxbench-")


if __name__ == "__main__":
    sys.exit(main())
