"""The peer: Arize Phoenix's OTLP ingestion, measured as bench.traces.ingest measures ours.

Phoenix (arize-phoenix, from PyPI) is installed apart, in its own venv (its dependencies clash
with ours): `python3.11 -m venv /tmp/phoenix-venv && /tmp/phoenix-venv/bin/pip install
arize-phoenix asyncpg` (asyncpg for `--backend postgres`). This starts `phoenix serve` on a
fresh store (SQLite in its working directory, or Postgres with `--backend postgres`), posts the
same protobuf bodies to its `POST /v1/traces` with the same concurrent clients, and waits until
its `spans` table holds them all.

    .venv/bin/python -m bench.traces.peer --backend sqlite [--batches 20 --clients 4]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import httpx

from bench.observability.run import _pg, ensure_pg_database
from bench.traces.ingest import accepted, drained, post_all
from bench.traces.spans import batches
from tests.support.live import free_port

PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/phoenix_bench"


def start(phoenix: Path, work: Path, database: str | None) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    if database:
        env["PHOENIX_SQL_DATABASE_URL"] = database
    log = open(work / "phoenix.log", "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen([str(phoenix), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"phoenix exited: {(work / 'phoenix.log').read_text()[-3000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.terminate()
    raise RuntimeError("phoenix did not start in 3 minutes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--phoenix", type=Path, default=Path("/tmp/phoenix-venv/bin/phoenix"))
    parser.add_argument("--dir", type=Path, default=Path("/tmp/maestrale-bench-phoenix"))
    parser.add_argument("--pg", default=PG)
    parser.add_argument("--limit", type=float, default=600, help="seconds to wait for the store")
    args = parser.parse_args()
    bodies = batches(args.batches, args.size)
    shutil.rmtree(args.dir, ignore_errors=True)
    args.dir.mkdir(parents=True)
    database = None
    if args.backend == "postgres":
        base_url, name = args.pg.rsplit("/", 1)
        asyncio.run(_pg(f"{base_url}/postgres", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        asyncio.run(ensure_pg_database(args.pg))
        database = args.pg.replace("+asyncpg", "")

    def count() -> int:
        if database:
            return int(asyncio.run(_pg(args.pg, "SELECT count(*) FROM spans"))[0][0])
        conn = sqlite3.connect(args.dir / "phoenix.db")
        try:
            return int(conn.execute("SELECT count(*) FROM spans").fetchone()[0])
        finally:
            conn.close()

    proc, base = start(args.phoenix, args.dir, database)
    try:
        print(f"phoenix ({args.backend}), POST /v1/traces:")
        expected = len(bodies) * args.size
        started = time.perf_counter()
        seconds, throttled = asyncio.run(post_all(base, bodies, args.clients, key=None))
        accepted(expected, seconds, args.clients, throttled)
        # Polled once a second: a reader of its SQLite file must not slow its writer down.
        drained(count, expected, started, every=1.0, limit=args.limit)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
