"""A soak: one `maestrale serve` (its in-process worker included) under a steady, moderate mixed
load for an hour, its resident memory sampled all along; the memory must stay flat.

    .venv/bin/python -m bench.soak.run [--minutes 60] [--rate 20] [--sample 30]
        [--backend sqlite|postgres]

The load, paced at `--rate` requests per second in all: chat completions (plain and streamed),
conversations (started, appended to, read, deleted), file uploads (uploaded, read, deleted),
searches of the chat completion events, the models list, and every `--batch-every` seconds a
100-line batch job run by the worker. Every `--sample` seconds it samples the RSS of the server
process; it prints the curve, the growth between the first and the last sampled windows after a
warm-up, and the least-squares slope in MB per hour. Postgres runs in a fresh database made
next to MAESTRALE_TEST_POSTGRES_URL (as the tests do) and dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson

from bench.gateway.processes import rss_by_process
from bench.harness import run_main
from tests.support.app_fixtures import API_KEY
from tests.support.databases import POSTGRES_ENV, create_postgres_database, drop_postgres_database
from tests.support.live import start_server, stop_server

MODEL = "maestrale-echo"
Op = Callable[[httpx.AsyncClient, int], Awaitable[None]]


def check(response: httpx.Response) -> httpx.Response:
    response.raise_for_status()
    return response


async def chat(client: httpx.AsyncClient, i: int) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": f"soak {i}: hello"}]}
    check(await client.post("/v1/chat/completions", json=body))


async def chat_stream(client: httpx.AsyncClient, i: int) -> None:
    body = {
        "model": MODEL,
        "stream": True,
        "messages": [{"role": "user", "content": f"soak {i}: tell me a story"}],
    }
    async with client.stream("POST", "/v1/chat/completions", json=body) as response:
        check(response)
        async for _ in response.aiter_lines():
            pass


async def conversation(client: httpx.AsyncClient, i: int) -> None:
    started = check(await client.post("/v1/conversations", json={"model": MODEL, "inputs": "hi"}))
    conversation_id = started.json()["conversation_id"]
    check(await client.post(f"/v1/conversations/{conversation_id}", json={"inputs": f"#{i}?"}))
    check(await client.get(f"/v1/conversations/{conversation_id}/history"))
    check(await client.delete(f"/v1/conversations/{conversation_id}"))


async def upload(client: httpx.AsyncClient, i: int) -> None:
    content = b"".join(orjson.dumps({"n": i, "text": "x" * 200}) + b"\n" for _ in range(16))
    files = {"file": (f"soak-{i}.jsonl", content, "application/octet-stream")}
    file_id = check(await client.post("/v1/files", files=files)).json()["id"]
    check(await client.get(f"/v1/files/{file_id}/content"))
    check(await client.delete(f"/v1/files/{file_id}"))


async def search(client: httpx.AsyncClient, i: int) -> None:
    body = {"search_params": {"filters": None}}
    path = "/v1/observability/chat-completion-events/search"
    check(await client.post(path, params={"page_size": 10}, json=body))


async def models(client: httpx.AsyncClient, i: int) -> None:
    check(await client.get("/v1/models"))


# The mix, in the order it rotates through: chats dominate, as on a gateway.
MIX: list[tuple[str, Op]] = [
    ("chat", chat),
    ("chat", chat),
    ("chat stream", chat_stream),
    ("conversation", conversation),
    ("chat", chat),
    ("file upload", upload),
    ("events search", search),
    ("models", models),
]


async def batch(client: httpx.AsyncClient, i: int) -> None:
    lines = b"".join(
        orjson.dumps(
            {
                "custom_id": f"soak-{i}-{n}",
                "body": {"messages": [{"role": "user", "content": f"line {n}"}], "max_tokens": 16},
            }
        )
        + b"\n"
        for n in range(100)
    )
    files = {"file": (f"batch-{i}.jsonl", lines, "application/octet-stream")}
    up = check(await client.post("/v1/files", data={"purpose": "batch"}, files=files)).json()
    body = {"endpoint": "/v1/chat/completions", "model": MODEL, "input_files": [up["id"]]}
    job = check(await client.post("/v1/batch/jobs", json=body)).json()
    while job["status"] in ("QUEUED", "RUNNING"):
        await asyncio.sleep(0.5)
        job = check(await client.get(f"/v1/batch/jobs/{job['id']}")).json()
    if job["status"] != "SUCCESS" or job["succeeded_requests"] != 100:
        raise RuntimeError(f"batch job ended {job['status']}: {job['succeeded_requests']} lines")


@dataclass
class Tally:
    done: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    first_error: dict[str, str] = field(default_factory=dict)

    async def run(self, name: str, op: Op, client: httpx.AsyncClient, i: int) -> None:
        try:
            await op(client, i)
        except Exception as exc:  # counted; the first of each kind reported
            self.failed[name] += 1
            self.first_error.setdefault(name, f"{type(exc).__name__}: {exc}"[:200])
        else:
            self.done[name] += 1


@dataclass
class Sample:
    seconds: float
    rss_mb: float
    requests: int


def slope_per_hour(samples: list[Sample]) -> float:
    """Least-squares slope of RSS over time, in MB per hour."""
    n = len(samples)
    if n < 2:
        return float("nan")
    mx = sum(s.seconds for s in samples) / n
    my = sum(s.rss_mb for s in samples) / n
    sxx = sum((s.seconds - mx) ** 2 for s in samples)
    sxy = sum((s.seconds - mx) * (s.rss_mb - my) for s in samples)
    return sxy / sxx * 3600 if sxx else float("nan")


async def drive(url: str, pid: int, args: argparse.Namespace) -> tuple[Tally, list[Sample]]:
    tally, samples = Tally(), []
    headers = {"Authorization": f"Bearer {API_KEY}"}
    # Idle connections closed before the server's keep-alive (uvicorn: 5 s) closes them: a request
    # sent on a connection the server is closing fails with a ReadError.
    limits = httpx.Limits(max_connections=64, keepalive_expiry=2.0)
    end = time.monotonic() + args.minutes * 60
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=60, limits=limits
    ) as client:

        async def paced() -> None:
            interval, counter, pending = 1 / args.rate, itertools.count(), set()
            mix = itertools.cycle(MIX)
            next_at = time.monotonic()
            while time.monotonic() < end:
                i = next(counter)
                name, op = next(mix)
                task = asyncio.create_task(tally.run(name, op, client, i))
                pending.add(task)
                task.add_done_callback(pending.discard)
                next_at += interval
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            await asyncio.gather(*pending)

        async def batches() -> None:
            for i in itertools.count():
                if time.monotonic() >= end:
                    return
                await tally.run("batch job (100 lines)", batch, client, i)
                await asyncio.sleep(args.batch_every)

        async def sampler() -> None:
            started = time.monotonic()
            while True:
                rss = rss_by_process([pid]).get(pid, 0.0)
                total = sum(tally.done.values()) + sum(tally.failed.values())
                samples.append(Sample(time.monotonic() - started, rss, total))
                if time.monotonic() >= end:
                    return
                await asyncio.sleep(min(args.sample, max(0.0, end - time.monotonic())))

        await asyncio.gather(paced(), batches(), sampler())
    return tally, samples


def report(tally: Tally, samples: list[Sample], args: argparse.Namespace) -> list[str]:
    out = [f"soak: {args.minutes:g} min at {args.rate:g} requests/s ({args.backend})", ""]
    out.append(f"{'operation':<24} {'done':>8} {'failed':>7}")
    for name in sorted(set(tally.done) | set(tally.failed)):
        out.append(f"{name:<24} {tally.done[name]:>8} {tally.failed[name]:>7}")
    out += [f"  {name}: {error}" for name, error in tally.first_error.items()]
    out += ["", "the curve (server process RSS):", f"{'minute':>7} {'RSS MB':>8} {'requests':>9}"]
    every = max(1, round(60 / args.sample))  # one row a minute
    rows = samples[::every] + ([samples[-1]] if (len(samples) - 1) % every else [])
    out += [f"{s.seconds / 60:>7.1f} {s.rss_mb:>8.1f} {s.requests:>9}" for s in rows]
    steady = [s for s in samples if s.seconds >= args.warmup * 60]
    window = max(1, round(args.window * 60 / args.sample))
    if len(steady) >= 2 * window:
        first = sum(s.rss_mb for s in steady[:window]) / window
        last = sum(s.rss_mb for s in steady[-window:]) / window
        out += [
            "",
            f"after a {args.warmup:g}-minute warm-up: mean RSS of the first {args.window:g} min "
            f"{first:.1f} MB, of the last {args.window:g} min {last:.1f} MB: "
            f"growth {last - first:+.1f} MB ({(last - first) / first * 100:+.1f} %)",
            f"least-squares slope after the warm-up: {slope_per_hour(steady):+.2f} MB/hour; "
            f"peak {max(s.rss_mb for s in samples):.1f} MB",
        ]
    return out


async def run(args: argparse.Namespace, tmp: Path) -> list[str]:
    data = tmp / "data"
    data.mkdir()
    database_url = await create_postgres_database() if args.backend == "postgres" else None
    env = {"MAESTRALE_LOG_LEVEL": "WARNING", "MAESTRALE_JOB_POLL_SECONDS": "0.2"}
    extra = ("--database-url", database_url) if database_url else ()
    proc, url = start_server(data, *extra, env=env)
    try:
        tally, samples = await drive(url, proc.pid, args)
    finally:
        stop_server(proc)
        if database_url:
            await drop_postgres_database(database_url)
    return report(tally, samples, args)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--rate", type=float, default=20, help="requests per second in all")
    parser.add_argument("--sample", type=float, default=30, help="seconds between RSS samples")
    parser.add_argument("--batch-every", type=float, default=60, help="seconds between batches")
    parser.add_argument("--warmup", type=float, default=5, help="minutes not judged")
    parser.add_argument("--window", type=float, default=5, help="minutes of each mean compared")
    parser.add_argument(
        "--backend",
        choices=["sqlite", "postgres"],
        default="postgres" if os.environ.get(POSTGRES_ENV) else "sqlite",
    )
    return run_main(run, parser.parse_args(), "maestrale-soak-")


if __name__ == "__main__":
    raise SystemExit(main())
