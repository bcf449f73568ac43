"""Per-request cost of the authenticated request path (auth cache → route → JSON) on a live
`maestrale serve`, measured from a client process over loopback.

Prints latency percentiles and the server's CPU time per request for `GET /v1/models` and
`GET /health`. No peer is compared here: the gateway benchmark (chat completions through
Maestrale vs LiteLLM) belongs to the inference gateway.

    .venv/bin/python -m bench.bench_auth_path [--requests 2000] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks / 100.0


async def _run(url: str, path: str, requests: int, concurrency: int) -> list[float]:
    latencies: list[float] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(requests):
        queue.put_nowait(i)
    headers = {"Authorization": f"Bearer {API_KEY}"}
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits) as client:

        async def worker() -> None:
            while not queue.empty():
                queue.get_nowait()
                start = time.perf_counter()
                resp = await client.get(path)
                latencies.append(time.perf_counter() - start)
                resp.raise_for_status()

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        proc, url = start_server(data, "--no-worker", env={"MAESTRALE_LOG_LEVEL": "WARNING"})
        try:
            for path in ("/health", "/v1/models"):
                asyncio.run(_run(url, path, 200, args.concurrency))  # warm-up
                cpu0 = _cpu_seconds(proc.pid)
                wall0 = time.perf_counter()
                lat = asyncio.run(_run(url, path, args.requests, args.concurrency))
                wall = time.perf_counter() - wall0
                cpu = _cpu_seconds(proc.pid) - cpu0
                q = statistics.quantiles(lat, n=100)
                print(
                    f"{path:<12} {args.requests / wall:8.0f} req/s  "
                    f"p50 {q[49] * 1000:6.2f} ms  p99 {q[98] * 1000:6.2f} ms  "
                    f"server CPU {cpu / args.requests * 1000:5.2f} ms/req"
                )
        finally:
            stop_server(proc)


if __name__ == "__main__":
    main()
