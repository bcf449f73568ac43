"""Cost and accuracy of the rate and spend limits.

1. The hook alone, in process: microseconds per call (before + after) with in-process counters,
   with Redis counters, and for an organization without limits.
2. Two live `maestrale serve` replicas on one Postgres: admitted requests per second under a
   closed-loop load of about 3x the limit, with Redis counters (one budget) and, for comparison,
   with per-process counters (each replica its own budget: the LiteLLM multi-replica failure).
3. One live replica: chat completion latency and server CPU per request, with and without limits.

    MAESTRALE_TEST_POSTGRES_URL=postgresql+asyncpg://... MAESTRALE_TEST_REDIS_URL=redis://... \\
    .venv/bin/python -m bench.bench_limits [--seconds 5] [--rps 20]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.bench_auth_path import _cpu_seconds
from maestrale.config.limits import ModelTokenLimits
from maestrale.engines.specs import ModelSpec, Price
from maestrale.engines.types import Usage
from maestrale.gateway.hooks import Caller, CallInfo
from maestrale.limits.hook import LimitsHook
from maestrale.limits.memory import MemoryCounters
from maestrale.limits.policy import EffectiveLimits
from tests.support import databases
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server

CHAT = {"model": "maestrale-echo", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}


class _Fixed:
    def __init__(self, limits: EffectiveLimits) -> None:
        self.limits = limits

    async def get(self, organization_id: str) -> EffectiveLimits:
        return self.limits


async def _hook_cost(counters: Any, limits: EffectiveLimits, n: int) -> float:
    spec = ModelSpec(
        id="m", engine="builtin", price=Price(input_per_million=1, output_per_million=1)
    )
    hook = LimitsHook(_Fixed(limits), counters, db=None)  # type: ignore[arg-type]
    call = CallInfo(Caller("org", "ws-bench"), spec, "chat", 20)
    # month counters are seeded once (from the database in a server); here: from zero

    async def no_usage_yet(seed: Any) -> float:
        return 0.0

    hook._seed = no_usage_yet  # type: ignore[method-assign]
    started = time.perf_counter()
    for _ in range(n):
        reservation = await hook.before_call(call)
        await hook.after_call(call, reservation, Usage(10, 5), 0.0)
    return (time.perf_counter() - started) / n * 1e6


async def part_hook(redis_url: str | None, n: int) -> None:
    full = EffectiveLimits(
        requests_per_second=10**9,
        monthly_spend_limit=10.0**9,
        models={"m": ModelTokenLimits(tokens_per_minute=10**12, tokens_per_month=10**12)},
    )
    print("1. hook cost per call (before + after), sequential")
    none = await _hook_cost(MemoryCounters(), EffectiveLimits(), n)
    print(f"   no limits for the organization : {none:7.1f} µs")
    print(
        f"   in-process counters, 4 limits  : {await _hook_cost(MemoryCounters(), full, n):7.1f} µs"
    )
    if redis_url:
        from redis.asyncio import Redis

        from maestrale.limits.redis_counters import RedisCounters

        redis = Redis.from_url(redis_url)
        cost = await _hook_cost(RedisCounters(redis), full, max(n // 5, 200))
        print(f"   Redis counters, 4 limits       : {cost:7.1f} µs  (2 round trips)")
        await redis.aclose()


async def _closed_loop(
    urls: list[str], seconds: float, concurrency: int
) -> tuple[list[float], int]:
    """Admission times (client side) of 200s, and the number of 429s."""
    admitted: list[float] = []
    refused = 0
    clients = [
        httpx.AsyncClient(base_url=u, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30)
        for u in urls
    ]
    deadline = time.monotonic() + seconds
    start = time.monotonic()

    async def worker(i: int) -> None:
        nonlocal refused
        client = clients[i % len(clients)]
        while time.monotonic() < deadline:
            resp = await client.post("/v1/chat/completions", json=CHAT)
            if resp.status_code == 200:
                admitted.append(time.monotonic() - start)
            elif resp.status_code == 429:
                refused += 1
                await asyncio.sleep(0.01)

    try:
        await asyncio.gather(*(worker(i) for i in range(concurrency)))
    finally:
        for c in clients:
            await c.aclose()
    return admitted, refused


def _report(label: str, admitted: list[float], refused: int, seconds: float, rps: int) -> None:
    buckets = collections.Counter(int(t) for t in admitted if t < int(seconds))
    full_seconds = [buckets.get(s, 0) for s in range(int(seconds))]
    print(
        f"   {label:<34} {len(admitted) / seconds:6.1f} admitted/s (limit {rps}), "
        f"per second {full_seconds}, {refused} refused"
    )


def part_replicas(redis_url: str | None, seconds: float, rps: int) -> None:
    print(f"2. two replicas, one Postgres, limit {rps} requests/s per workspace, closed loop")
    modes: list[tuple[str, str | None]] = []
    if redis_url:
        modes.append(("Redis counters (shared budget)", redis_url))
    modes.append(("in-process counters (no Redis)", None))
    for label, redis in modes:
        database_url = asyncio.run(databases.create_postgres_database())
        env = {
            "MAESTRALE_LIMITS": f'{{"requests_per_second": {rps}}}',
            "MAESTRALE_LOG_LEVEL": "WARNING",
        }
        if redis:
            env["MAESTRALE_REDIS_URL"] = redis
        procs = []
        with tempfile.TemporaryDirectory() as tmp:
            try:
                urls = []
                for name in ("a", "b"):
                    data = Path(tmp) / name
                    data.mkdir()
                    proc, url = start_server(
                        data, "--no-worker", "--database-url", database_url, env=env
                    )
                    procs.append(proc)
                    urls.append(url)
                asyncio.run(_closed_loop(urls, 1.0, 4))  # warm-up
                time.sleep(1.1)
                admitted, refused = asyncio.run(_closed_loop(urls, seconds, 12))
                _report(label, admitted, refused, seconds, rps)
            finally:
                for proc in procs:
                    stop_server(proc)
                asyncio.run(databases.drop_postgres_database(database_url))


async def _latency(url: str, n: int, concurrency: int) -> list[float]:
    out: list[float] = []
    sem = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {API_KEY}"}) as c:

        async def one() -> None:
            async with sem:
                t = time.perf_counter()
                resp = await c.post("/v1/chat/completions", json=CHAT)
                out.append(time.perf_counter() - t)
                resp.raise_for_status()

        await asyncio.gather(*(one() for _ in range(n)))
    return out


def part_latency(redis_url: str | None, n: int) -> None:
    print(f"3. one replica (SQLite), {n} chat completions, concurrency 8")
    big = orjson.dumps(
        {
            "requests_per_second": 10**6,
            "monthly_spend_limit": 10**6,
            "models": {"maestrale-echo": {"tokens_per_minute": 10**12, "tokens_per_month": 10**12}},
        }
    ).decode()
    modes = [("no limits", {}), ("4 limits, in-process counters", {"MAESTRALE_LIMITS": big})]
    if redis_url:
        modes.append(
            (
                "4 limits, Redis counters",
                {"MAESTRALE_LIMITS": big, "MAESTRALE_REDIS_URL": redis_url},
            )
        )
    for label, env in modes:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data"
            data.mkdir()
            proc, url = start_server(
                data, "--no-worker", env={**env, "MAESTRALE_LOG_LEVEL": "WARNING"}
            )
            try:
                asyncio.run(_latency(url, 300, 8))
                cpu0 = _cpu_seconds(proc.pid)
                lat = asyncio.run(_latency(url, n, 8))
                cpu = _cpu_seconds(proc.pid) - cpu0
                q = statistics.quantiles(lat, n=100)
                print(
                    f"   {label:<32} p50 {q[49] * 1000:6.2f} ms  p99 {q[98] * 1000:6.2f} ms  "
                    f"server CPU {cpu / n * 1000:5.2f} ms/req"
                )
            finally:
                stop_server(proc)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rps", type=int, default=20)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    redis_url = os.environ.get("MAESTRALE_TEST_REDIS_URL")
    pg = os.environ.get(databases.POSTGRES_ENV)
    asyncio.run(part_hook(redis_url, 20000))
    if pg:
        part_replicas(redis_url, args.seconds, args.rps)
    part_latency(redis_url, args.calls)


if __name__ == "__main__":
    main()
