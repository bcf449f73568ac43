"""Inbound webhooks benchmark: verified deliveries accepted per second by the receiving endpoint,
and the delay from a delivery to the work its trigger starts, on SQLite and Postgres, beside a
bare HMAC-checking endpoint (the peer: what durability costs).

Each step gets a fresh `maestrale serve` (one process, as `tests/support/live.py` starts it,
log level WARNING) on a new SQLite file, or with `--postgres URL` on a scratch Postgres database
made on that server and dropped at the end:

1. the receiver alone (the per-webhook rate limit raised by settings, no in-process worker):
   `--clients` httpx senders post new signed GitHub `push` deliveries to one webhook in a
   closed loop, at c=1 and c=N, `--seconds` each: accepted/s, the share refused, answer
   p50/p99, server and client CPU per answer;
2. with the in-process worker (server A, rate limit raised): the flood at c=N, then the time
   until the worker has dispatched every accepted delivery (the webhook has no trigger: the job
   reads the delivery, finds no trigger, marks it dispatched): the end-to-end rate; then the
   delay to an agent conversation: a trigger `agents` / `start_agent_session` on an agent of
   model `maestrale-echo`, `--count` deliveries at `--rate`/s (`bench.inbound.delay`);
3. with Temporal (server B, default inbound settings, pointed at one `EmbeddedTemporal` of the
   run, a `bench.workflows.worker` no-op worker dialing the worker proxy): a flood at c=N of one
   webhook at the default rate limit (the share answered 429), then the delay to a started
   workflow execution (trigger `workflows` / `start_workflow` on the no-op workflow).
The peer (`bench.inbound.baseline`) is flooded the same way first.

    .venv/bin/python -m bench.inbound.run [--postgres URL] [--no-sqlite] [--no-temporal]
        [--seconds 10] [--clients 16] [--count 100] [--rate 10] [--poll-seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from bench.gateway.processes import free_port, process_tree, stop_process
from bench.gateway.targets import PostgresDatabases
from bench.harness import CpuWatch, run_main, start_process
from bench.inbound import delay, load
from bench.inbound.signing import SECRET
from bench.observability.run import query
from bench.workflows.servers import NAMESPACE, register, start_worker, whoami
from bench.workflows.worker import WORKFLOW
from maestrale.workflows.temporal.devserver import EmbeddedTemporal, find_binary
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server

WATCHED = ("server", "client")
RAISED = {"MAESTRALE_INBOUND_RATE_PER_SECOND": "1000000", "MAESTRALE_INBOUND_BURST": "1000000"}
QUIET = {"MAESTRALE_LOG_LEVEL": "WARNING"}


def pids_of(proc_pid: int) -> dict[str, list[int]]:
    return {"server": process_tree(proc_pid), "client": [os.getpid()]}


async def serve(
    db_url: str, home: Path, env: dict[str, str], args: argparse.Namespace
) -> tuple[Any, str]:
    """`maestrale serve` on `db_url` (migrated at start), one process, with `env`."""
    data = home / "data"
    data.mkdir(parents=True)
    if args.poll_seconds is not None:
        env = {**env, "MAESTRALE_JOB_POLL_SECONDS": str(args.poll_seconds)}
    return await asyncio.to_thread(
        start_server, data, "--database-url", db_url, env={**QUIET, **env}
    )


async def webhook(api: httpx.AsyncClient, name: str) -> str:
    """A GitHub webhook of the bench's workspace: its receiving path."""
    resp = await api.post(
        "/v1/webhooks", json={"provider": "github", "name": name, "secret": SECRET}
    )
    resp.raise_for_status()
    body: dict[str, Any] = resp.json()
    return httpx.URL(body["url"]).path


async def trigger(api: httpx.AsyncClient, path: str, handler: str, primitive: str) -> str:
    action = "start_workflow" if handler == "workflows" else "start_agent_session"
    resp = await api.post(
        "/v1/triggers",
        json={
            "event_source_id": path.split("/")[3],
            "handler": handler,
            "action": {"primitive_id": primitive, "type": action},
            "owner_type": "workspace",
            "title": f"bench {handler}",
        },
    )
    if resp.status_code != 201:
        raise RuntimeError(f"trigger: {resp.status_code} {resp.text[:300]}")
    return str(resp.json()["id"])


async def backlog(db_url: str, timeout: float = 300) -> tuple[int, float]:
    """How many accepted deliveries wait for their dispatch now, and the seconds until none
    does."""
    sql = (
        "SELECT count(*) FROM webhook_deliveries "
        "WHERE status = 'accepted' AND dispatched_at IS NULL"
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    waiting = first = int((await asyncio.to_thread(query, db_url, sql))[0][0])
    while waiting and loop.time() - started < timeout:
        await asyncio.sleep(0.1)
        waiting = int((await asyncio.to_thread(query, db_url, sql))[0][0])
    return first, loop.time() - started


@dataclass
class Measured:
    floods: list[load.Load] = field(default_factory=list)
    backlogs: list[str] = field(default_factory=list)
    delays: list[delay.Delays] = field(default_factory=list)


async def flood_rows(
    label: str,
    url: str,
    db_url: str | None,
    path: str,
    pid: int,
    concurrency: list[int],
    seconds: float,
    out: Measured,
) -> None:
    """A flood at each concurrency; with `db_url`, then the wait until the in-process worker
    has dispatched every accepted delivery (the end-to-end rate)."""
    for clients in concurrency:
        row = await load.flood(label, url, [path], clients, seconds, pids_of(pid))
        out.floods.append(row)
        print(f"  {label} c={clients}: {row.rate:.1f} accepted/s", flush=True)
        if db_url is None:
            continue
        watch = CpuWatch({"server": process_tree(pid)})
        waiting, drain = await backlog(db_url)
        cpu = watch.since()["server"] * 1000 / max(1, waiting)
        note = (
            f"{label} c={clients}: {row.accepted} accepted in {row.seconds:.1f} s; at the end"
            f" {waiting} waited for the worker, all dispatched {drain:.1f} s later"
            f" ({cpu:.1f} ms of server CPU each): end to end"
            f" {row.accepted / (row.seconds + drain):.1f} dispatched/s"
        )
        out.backlogs.append(note)
        print(f"  {note}", flush=True)


async def receiver_alone(label: str, db_url: str, home: Path, args: argparse.Namespace) -> Measured:
    """The receiving path by itself: the rate limit raised, no in-process worker (the
    deliveries' jobs stay queued)."""
    out = Measured()
    proc, url = await serve(db_url, home, {**RAISED, "MAESTRALE_WORKER": "false"}, args)
    try:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as api:
            path = await webhook(api, "bench flood")
        await flood_rows(
            f"maestrale {label}, worker off",
            url,
            None,
            path,
            proc.pid,
            [1, args.clients],
            args.seconds,
            out,
        )
        return out
    finally:
        await asyncio.to_thread(stop_server, proc)


async def server_a(label: str, db_url: str, home: Path, args: argparse.Namespace) -> Measured:
    """With the in-process worker dispatching (the rate limit raised): a flood and the time
    until its backlog is dispatched, then the delay to an agent conversation."""
    out = Measured()
    proc, url = await serve(db_url, home, RAISED, args)
    try:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as api:
            path = await webhook(api, "bench flood")
            await flood_rows(
                f"maestrale {label}, worker on",
                url,
                db_url,
                path,
                proc.pid,
                [args.clients],
                args.seconds,
                out,
            )
            agent = await api.post("/v1/agents", json={"model": "maestrale-echo", "name": "bench"})
            agent.raise_for_status()
            path = await webhook(api, "bench agent")
            trigger_id = await trigger(api, path, "agents", agent.json()["id"])
            print(f"  {label}: delay to a conversation, {args.count} at {args.rate}/s", flush=True)
            out.delays.append(
                await delay.measure(
                    f"{label}: agent conversation",
                    url,
                    api,
                    path,
                    trigger_id,
                    args.count,
                    args.rate,
                )
            )
        return out
    finally:
        await asyncio.to_thread(stop_server, proc)


async def server_b(
    label: str, db_url: str, home: Path, temporal: EmbeddedTemporal, args: argparse.Namespace
) -> Measured:
    """Default inbound settings, on Temporal: a flood at the default rate limit, then the delay
    to a workflow execution."""
    out = Measured()
    env = {
        "MAESTRALE_TEMPORAL_ADDRESS": temporal.address,
        "MAESTRALE_TEMPORAL_NAMESPACE": NAMESPACE,
        "MAESTRALE_TEMPORAL_PROXY_PORT": "0",
    }
    proc, url = await serve(db_url, home, env, args)
    worker = None
    try:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as api:
            path = await webhook(api, "bench default limit")
            await flood_rows(
                f"maestrale {label}, default rate limit",
                url,
                db_url,
                path,
                proc.pid,
                [args.clients],
                args.seconds,
                out,
            )
            async with aiohttp.ClientSession(headers=headers) as session:
                who = await whoami(session, url)
                worker = await start_worker(
                    who["scheduler_url"], who["namespace"], args.queue, home / "worker.log", API_KEY
                )
                await register(session, url, args.queue)
            path = await webhook(api, "bench workflow")
            trigger_id = await trigger(api, path, "workflows", WORKFLOW)
            print(f"  {label}: delay to an execution, {args.count} at {args.rate}/s", flush=True)
            out.delays.append(
                await delay.measure(
                    f"{label}: workflow execution",
                    url,
                    api,
                    path,
                    trigger_id,
                    args.count,
                    args.rate,
                )
            )
        return out
    finally:
        if worker is not None:
            stop_process(worker, "")
        await asyncio.to_thread(stop_server, proc)


async def peer(args: argparse.Namespace, tmp: Path) -> list[load.Load]:
    """The bare endpoint (`bench.inbound.baseline`), flooded as the receiver is."""
    port = free_port()
    cmd = [sys.executable, "-m", "bench.inbound.baseline", str(port), SECRET]
    proc, _ = await start_process(cmd, tmp / "baseline.log", "the baseline endpoint")
    try:
        url = f"http://127.0.0.1:{port}"
        path = f"/v1/webhooks/wh_{uuid.uuid4().hex}/receive"
        rows = []
        for clients in (1, args.clients):
            row = await load.flood(
                "peer: FastAPI, HMAC only, nothing stored",
                url,
                [path],
                clients,
                args.seconds,
                pids_of(proc.pid),
            )
            print(f"  peer c={clients}: {row.rate:.1f} accepted/s", flush=True)
            rows.append(row)
        return rows
    finally:
        stop_process(proc, "")


async def run(args: argparse.Namespace, tmp: Path) -> list[str]:
    databases = PostgresDatabases(args.postgres) if args.postgres else None
    backends: list[tuple[str, Any]] = []
    if not args.no_sqlite:
        backends.append(("sqlite", lambda name: f"sqlite+aiosqlite:///{tmp}/{name}.db"))
    if databases is not None:
        backends.append(("postgres", lambda name: databases.create()))
    measured = Measured()
    temporal = None
    try:
        print("peer", flush=True)
        measured.floods += await peer(args, tmp)
        for label, make in backends:
            print(label, flush=True)
            for name, step in (("alone", receiver_alone), ("a", server_a)):
                db_url = await asyncio.to_thread(make, f"{label}-{name}")
                part = await step(label, db_url, tmp / f"{label}-{name}", args)
                measured.floods += part.floods
                measured.backlogs += part.backlogs
                measured.delays += part.delays
        if not args.no_temporal and backends:
            temporal = EmbeddedTemporal(
                tmp / "temporal", host="127.0.0.1", port=0, namespace=NAMESPACE
            )
            await temporal.start()
            for label, make in backends:
                print(f"{label}, on Temporal", flush=True)
                db_url = await asyncio.to_thread(make, f"{label}-b")
                part = await server_b(label, db_url, tmp / f"{label}-b", temporal, args)
                measured.floods += part.floods
                measured.backlogs += part.backlogs
                measured.delays += part.delays
    finally:
        if temporal is not None:
            await temporal.stop()
        if databases is not None:
            await asyncio.to_thread(databases.drop_all)
    return [
        f"Inbound webhooks benchmark: {os.cpu_count()} CPUs, no pinning; signed GitHub push"
        f" deliveries (~1.3 KB), httpx clients, {args.seconds:g} s per flood; job poll"
        f" {'0.5 (default)' if args.poll_seconds is None else args.poll_seconds} s",
        "",
        "== receiving endpoint: verified deliveries accepted ==",
        *load.table(measured.floods, WATCHED),
        *[f"  {note}" for note in measured.backlogs],
        "",
        "== delay from the delivery's answer to the started work ==",
        *delay.table(measured.delays),
    ]


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Maestrale inbound webhooks benchmark")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="also run on Postgres, in scratch databases made on this server and dropped at the"
        " end (e.g. postgresql+asyncpg://postgres@127.0.0.1:5432/test)",
    )
    parser.add_argument("--no-sqlite", action="store_true", help="Postgres only")
    parser.add_argument("--no-temporal", action="store_true", help="skip the workflow part")
    parser.add_argument("--seconds", type=float, default=10.0, help="each flood")
    parser.add_argument("--clients", type=int, default=16, help="concurrent senders")
    parser.add_argument("--count", type=int, default=100, help="deliveries of a delay run")
    parser.add_argument("--rate", type=float, default=10.0, help="deliveries/s of a delay run")
    parser.add_argument(
        "--poll-seconds",
        type=float,
        help="MAESTRALE_JOB_POLL_SECONDS of the servers (the job worker's poll; default 0.5)",
    )
    args = parser.parse_args(argv)
    args.queue = f"bench-inbound-{uuid.uuid4().hex[:8]}"
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if not args.no_temporal and find_binary() is None:
        print("the `temporal` CLI is missing: the workflow part is skipped", file=sys.stderr)
        args.no_temporal = True
    return run_main(run, args, "maestrale-inbound-bench-")


if __name__ == "__main__":
    sys.exit(main())
