"""Slow models must not slow the server: conversation appends whose model takes 5 s each, all at
once, on SQLite and on Postgres.

    .venv/bin/python -m bench.concurrency.run [--backend sqlite|postgres|both]
        [--appends 200] [--sleep-ms 5000] [--src DIR]

It starts `maestrale serve --no-worker` (a real uvicorn process, its default settings: a
Postgres pool of 10 + 10 connections), creates `--appends` conversations on the builtin engine,
then appends to all of them at once, each append's model waiting `--sleep-ms` (the builtin
engine's `/sleep`). Meanwhile a probe (a process of its own) sends, one after the other,
`GET /v1/models` and a plain chat completion (no sleep). The load's client is aiohttp, whose
200 requests cost little CPU on this machine's other core. It prints:

* the appends' wall time (first sent to last answered) and their statuses: with nothing held
  during the model calls, all of them answer 200 in about one model call's time;
* the probes' p50 / p99 / max latency during the load.

`--src DIR` serves another checkout's `src` (e.g. a `git worktree` of an older commit), to
compare two versions on the same machine. Postgres runs in a fresh database made next to
MAESTRALE_TEST_POSTGRES_URL (as the tests do) and dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from bench.gateway.processes import free_port, stop_process, wait_http
from tests.support.databases import POSTGRES_ENV, create_postgres_database, drop_postgres_database

KEY = "msk_bench_concurrency_key_0123456789abcdefghijklmnop"
MODEL = "maestrale-echo"


def start_server(
    tmp: Path, database_url: str | None, src: Path | None
) -> tuple[subprocess.Popen[bytes], str]:
    data = tmp / "data"
    data.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = tmp / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAESTRALE_")}
    env.update(
        {
            "MAESTRALE_LOG_LEVEL": "WARNING",
            "MAESTRALE_BOOTSTRAP_API_KEY": KEY,
            "MAESTRALE_WORKERS": "1",  # the figures of one process
            "PYTHONUNBUFFERED": "1",
        }
    )
    if database_url is not None:
        env["MAESTRALE_DATABASE_URL"] = database_url
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(src.resolve()), env.get("PYTHONPATH", "")) if p
        )
    cmd = [sys.executable, "-m", "maestrale", "serve", "--port", str(port)]
    cmd += ["--data-dir", str(data), "--no-worker"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    wait_http(f"http://127.0.0.1:{port}/health", proc, "maestrale serve", log, 90)
    return proc, f"http://127.0.0.1:{port}"


def percentiles(values: list[float]) -> str:
    if not values:
        return "no sample"
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (
        f"p50 {statistics.median(ordered):7.1f} ms  p99 {p99:7.1f} ms  "
        f"max {ordered[-1]:7.1f} ms  ({len(ordered)} requests)"
    )


def probe(base: str, stop: Any, results: Any) -> None:
    """In a process of its own (so that the load's client does not delay it): the models list
    and a plain chat, one after the other, until `stop` is set; the latencies go to `results`."""
    names = ("GET /v1/models", "POST /v1/chat/completions")
    times: dict[str, list[float]] = {name: [] for name in names}
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "ping"}]}
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=base, headers=headers, timeout=120) as client:
        while not stop.is_set():
            for name in names:
                started = time.perf_counter()
                if name.startswith("GET"):
                    response = client.get("/v1/models")
                else:
                    response = client.post("/v1/chat/completions", json=chat)
                elapsed = (time.perf_counter() - started) * 1000
                key = name if response.status_code == 200 else f"{name} ({response.status_code})"
                times.setdefault(key, []).append(elapsed)
            time.sleep(0.02)
    results.put(times)


async def load(base: str, appends: int, sleep_ms: int) -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(
        base, headers=headers, connector=connector, timeout=timeout
    ) as client:
        semaphore = asyncio.Semaphore(16)

        async def start() -> str:
            async with (
                semaphore,
                client.post("/v1/conversations", json={"model": MODEL, "inputs": "hello"}) as r,
            ):
                r.raise_for_status()
                return str((await r.json())["conversation_id"])

        ids = await asyncio.gather(*(start() for _ in range(appends)))
        body = {"inputs": f"/sleep {sleep_ms}\nhow are you?"}
        context = multiprocessing.get_context("spawn")
        stop, results = context.Event(), context.Queue()
        prober = context.Process(target=probe, args=(base, stop, results))
        prober.start()
        await asyncio.sleep(1.5)  # the prober starts, and probes a while before the load

        async def append(conversation_id: str) -> tuple[int, float]:
            started = time.perf_counter()
            try:
                async with client.post(f"/v1/conversations/{conversation_id}", json=body) as r:
                    await r.read()
                    status = r.status
            except aiohttp.ClientError as exc:
                status = -1
                print(f"  append failed: {type(exc).__name__}: {exc}")
            return status, time.perf_counter() - started

        started = time.perf_counter()
        outcomes = await asyncio.gather(*(append(cid) for cid in ids))
        wall = time.perf_counter() - started
        stop.set()
        times: dict[str, list[float]] = await asyncio.to_thread(results.get)
        prober.join()
    statuses = Counter(status for status, _ in outcomes)
    slowest = max(seconds for _, seconds in outcomes)
    print(
        f"  {appends} appends, model {sleep_ms} ms each: wall {wall:.2f} s, slowest {slowest:.2f} s"
    )
    print(f"  statuses: {dict(sorted(statuses.items()))}")
    for name, values in times.items():
        print(f"  {name:32s} {percentiles(values)}")


async def run(label: str, database_url: str | None, args: argparse.Namespace) -> None:
    print(f"{label}:")
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_server(Path(tmp), database_url, args.src)
        try:
            await load(base, args.appends, args.sleep_ms)
        finally:
            stop_process(proc, "plain")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = "both" if os.environ.get(POSTGRES_ENV) else "sqlite"
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default=default)
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--sleep-ms", type=int, default=5000)
    parser.add_argument("--src", type=Path, default=None, help="serve this checkout's src")
    args = parser.parse_args()
    if args.backend in ("sqlite", "both"):
        await run("SQLite", None, args)
    if args.backend in ("postgres", "both"):
        if not os.environ.get(POSTGRES_ENV):
            raise SystemExit(f"set {POSTGRES_ENV} to run on Postgres")
        url = await create_postgres_database()
        try:
            await run("Postgres", url, args)
        finally:
            await drop_postgres_database(url)


if __name__ == "__main__":
    asyncio.run(main())
