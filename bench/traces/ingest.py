"""Telemetry ingestion: spans per second into SQLite and Postgres.

Two measurements, on a fresh database each run (Postgres: `--pg`, dropped and created again;
SQLite: a new file under --dir):

- `direct`: the receiver's own code in this process, phase by phase: protobuf parse +
  `span_rows` (decode), then the store's writer in one transaction per batch (insert + trace
  summary merge), each phase timed, optionally under cProfile (`--profile`: the top functions
  of each phase by cumulative time, to see where the time goes).
- `http`: a live `maestrale serve` on that database; `--clients` concurrent clients post the
  batches (OTLP/HTTP protobuf, `POST /v1/traces`, 429 answers retried after their
  Retry-After) and the run ends when `telemetry_spans` holds every span (the queue drained).
  Prints the accepted rate (what the API took) and the stored rate (end to end).

The batches (`bench.traces.spans`: GenAI agent traces of 8 spans, ~1 KB of messages per LLM
span) are built before any timing. The issue's target: >= 20,000 spans/s on Postgres, 2 cores.

    .venv/bin/python -m bench.traces.ingest --backend postgres --mode both [--profile]
    .venv/bin/python -m bench.traces.ingest --backend sqlite --batches 100 --clients 4
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.observability.run import _pg, ensure_pg_database, query
from bench.traces.spans import batches
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server

PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/maestrale_bench_traces"


def fresh_database(backend: str, pg: str, root: Path) -> str:
    """The URL of an empty database of `backend` (migrated by whoever opens it first)."""
    if backend == "sqlite":
        shutil.rmtree(root / "sqlite", ignore_errors=True)
        (root / "sqlite").mkdir(parents=True)
        return f"sqlite+aiosqlite:///{root / 'sqlite' / 'traces.db'}"
    base, name = pg.rsplit("/", 1)
    asyncio.run(_pg(f"{base}/postgres", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    asyncio.run(ensure_pg_database(pg))
    return pg


def profiled(enabled: bool, label: str, work: Callable[[], Any]) -> tuple[Any, float]:
    """Run `work`, timed (and profiled: the top functions by cumulative and own time)."""
    profile = cProfile.Profile() if enabled else None
    started = time.perf_counter()
    if profile:
        profile.enable()
    result = work()
    if profile:
        profile.disable()
    seconds = time.perf_counter() - started
    if profile:
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out)
        stats.sort_stats("cumulative").print_stats(12)
        stats.sort_stats("tottime").print_stats(15)
        print(f"--- profile: {label}\n{out.getvalue()}")
    return result, seconds


def time_statements(engine: Any, spent: dict[str, float]) -> None:
    """Add each statement's time (from the driver's execute to its answer) to `spent`, by kind:
    the verb and table (`INSERT telemetry_spans`)."""
    from sqlalchemy import event

    @event.listens_for(engine, "before_cursor_execute")
    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        conn.info["bench_started"] = time.perf_counter()

    @event.listens_for(engine, "after_cursor_execute")
    def after(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        words = statement.split()
        verb = words[0].upper() if words else "?"
        table = next((w for w in words if w.startswith("telemetry_")), "")
        kind = f"{verb} {table}".strip()
        spent[kind] = spent.get(kind, 0.0) + time.perf_counter() - conn.info["bench_started"]


def direct(url: str, bodies: list[bytes], profile: bool) -> None:
    """Decode then write, in this process, through the receiver's and the writer's functions."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from maestrale.core.db import Database
    from maestrale.core.migrate import upgrade
    from maestrale.telemetry import repository
    from maestrale.telemetry.otlp.body import PROTOBUF, parse
    from maestrale.telemetry.otlp.records import Owner
    from maestrale.telemetry.otlp.spans import span_rows
    from maestrale.telemetry.otlp.values import Limits

    upgrade(url)
    owner = Owner("bench-org", "bench-workspace")
    limits = Limits()
    spans = 0

    def decode() -> list[list[dict[str, Any]]]:
        now = time.time_ns()
        out = []
        for data in bodies:
            message = parse("traces", data, PROTOBUF)
            assert isinstance(message, ExportTraceServiceRequest)
            out.append(span_rows(message, owner, limits, now).rows)
        return out

    decoded, seconds = profiled(profile, "decode", decode)
    spans = sum(len(rows) for rows in decoded)
    size = sum(len(b) for b in bodies) / len(bodies) / 1024
    print(
        f"  decode (parse + rows): {spans / seconds:10,.0f} spans/s  ({seconds:.2f} s, "
        f"{len(bodies)} bodies of {size:.0f} KiB)"
    )

    statements: dict[str, float] = {}

    async def write() -> None:
        db = Database(url, pool_size=2)
        time_statements(db.engine.sync_engine, statements)
        try:
            for rows in decoded:
                async with db.transaction() as work:
                    await repository.write_spans(work.session, rows)
        finally:
            await db.dispose()

    _, seconds = profiled(profile, "write", lambda: asyncio.run(write()))
    print(f"  write (insert + merge): {spans / seconds:9,.0f} spans/s  ({seconds:.2f} s)")
    for kind, spent in sorted(statements.items(), key=lambda kv: -kv[1]):
        print(f"    {kind:<40} {spent:6.2f} s  ({100 * spent / seconds:4.1f}%)")
    rest = seconds - sum(statements.values())
    print(
        f"    {'in Python (rows, summaries, SQLAlchemy)':<40} {rest:6.2f} s  "
        f"({100 * rest / seconds:4.1f}%)"
    )
    stored = query(url, "SELECT count(*) FROM telemetry_spans")[0][0]
    traces = query(url, "SELECT count(*) FROM telemetry_traces")[0][0]
    print(f"  stored {stored} spans, {traces} trace summaries")


async def post_all(
    base: str, bodies: list[bytes], clients: int, key: str | None = API_KEY
) -> tuple[float, int]:
    """Post every body to `POST /v1/traces` with `clients` concurrent senders: the seconds
    taken, and the 429 answers seen (each retried after its Retry-After)."""
    pending = list(reversed(bodies))
    throttled = 0
    headers = {"Content-Type": "application/x-protobuf"}
    if key:
        headers["Authorization"] = f"Bearer {key}"

    async def sender(http: httpx.AsyncClient) -> None:
        nonlocal throttled
        while pending:
            body = pending.pop()
            while True:
                resp = await http.post("/v1/traces", content=body)
                if resp.status_code != 429:
                    break
                throttled += 1
                await asyncio.sleep(float(resp.headers.get("retry-after", "1")))
            assert resp.status_code == 200, f"{resp.status_code}: {resp.text[:300]}"

    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as http:
        started = time.perf_counter()
        await asyncio.gather(*(sender(http) for _ in range(clients)))
        return time.perf_counter() - started, throttled


def drained(
    count: Callable[[], int], expected: int, started: float, every: float = 0.05, limit: float = 600
) -> None:
    """Wait until `count()` (asked every `every` seconds) reaches `expected` (`limit` seconds
    at most); print the stored rate."""
    stored = 0
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        stored = count()
        if stored >= expected:
            break
        time.sleep(every)
    seconds = time.perf_counter() - started
    print(
        f"  stored:   {stored / seconds:10,.0f} spans/s  ({seconds:.2f} s until "
        f"{stored}/{expected} spans were in the table)"
    )


def accepted(expected: int, seconds: float, clients: int, throttled: int) -> None:
    print(
        f"  accepted: {expected / seconds:10,.0f} spans/s  ({seconds:.2f} s, "
        f"{clients} clients, {throttled} answers 429)"
    )


def http(
    url: str, data_dir: Path, bodies: list[bytes], size: int, clients: int, prefill: int
) -> None:
    proc, base = start_server(data_dir, env={"MAESTRALE_DATABASE_URL": url})  # migrates
    try:
        before = 0
        if prefill:
            from bench.traces.search import generate

            true = "1" if url.startswith("sqlite") else "true"
            org, ws = query(
                url, f"SELECT organization_id, id FROM workspaces WHERE is_default = {true}"
            )[0]
            print(f"  prefilling {prefill} spans (60% in the key's workspace) ...")
            asyncio.run(generate(url, 0, prefill, org, ws, time.time_ns() - 30 * 86_400 * 10**9))
            before = prefill
        expected = len(bodies) * size
        started = time.perf_counter()
        seconds, throttled = asyncio.run(post_all(base, bodies, clients))
        accepted(expected, seconds, clients, throttled)
        drained(
            lambda: int(query(url, "SELECT count(*) FROM telemetry_spans")[0][0]) - before,
            expected,
            started,
        )
    finally:
        stop_server(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="postgres")
    parser.add_argument("--mode", choices=["direct", "http", "both"], default="both")
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--size", type=int, default=512, help="spans per export request")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--profile", action="store_true", help="cProfile the direct phases")
    parser.add_argument(
        "--prefill",
        type=int,
        default=0,
        help="spans stored (and analyzed) before the http run: a store in use (Postgres only)",
    )
    parser.add_argument("--dir", type=Path, default=Path("/tmp/maestrale-bench-traces"))
    parser.add_argument("--pg", default=PG)
    args = parser.parse_args()
    started = time.perf_counter()
    bodies = batches(args.batches, args.size)
    print(
        f"built {len(bodies)} bodies of {args.size} spans in {time.perf_counter() - started:.1f} s"
    )
    if args.mode in ("direct", "both"):
        print(f"{args.backend}, direct:")
        direct(fresh_database(args.backend, args.pg, args.dir), bodies, args.profile)
    if args.mode in ("http", "both"):
        print(f"{args.backend}, http (POST /v1/traces):")
        url = fresh_database(args.backend, args.pg, args.dir)
        data_dir = args.dir / "server" / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        http(url, data_dir, bodies, args.size, args.clients, args.prefill)


if __name__ == "__main__":
    main()
