"""A 10,000-line chat batch on the builtin engine, run by the in-process worker of a live
`maestrale serve`: lines per second, against calling the engine directly with the same
concurrency, and the server's resident memory as the job progresses (it should stay flat).

    .venv/bin/python -m bench.bench_batch [--lines 10000] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import httpx
import orjson

from maestrale.engines.builtin import BuiltinEngine
from maestrale.engines.types import ChatRequest
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server

CONCURRENCY = 16


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def text(i: int) -> str:
    return f"request number {i}: summarise the weather in one short sentence please"


def jsonl(lines: int) -> bytes:
    return b"".join(
        orjson.dumps(
            {
                "custom_id": f"req-{i}",
                "body": {"messages": [{"role": "user", "content": text(i)}], "max_tokens": 64},
            }
        )
        + b"\n"
        for i in range(lines)
    )


async def direct(lines: int) -> float:
    """Seconds to answer the same requests by calling the engine directly."""
    engine = BuiltinEngine()
    limit = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        async with limit:
            messages = [{"role": "user", "content": text(i)}]
            await engine.chat(ChatRequest(model="maestrale-echo", messages=messages, max_tokens=64))

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(lines)))
    return time.perf_counter() - started


async def through_batch(url: str, pid: int, lines: int) -> tuple[float, list[tuple[int, float]]]:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        files = {"file": ("bench.jsonl", jsonl(lines), "application/octet-stream")}
        up = await client.post("/v1/files", data={"purpose": "batch"}, files=files)
        up.raise_for_status()
        samples = [(0, rss_mb(pid))]
        started = time.perf_counter()
        body = {"endpoint": "/v1/chat/completions", "model": "maestrale-echo"}
        created = await client.post(
            "/v1/batch/jobs", json={**body, "input_files": [up.json()["id"]]}
        )
        created.raise_for_status()
        job_id = created.json()["id"]
        next_mark = lines // 10
        while True:
            job = (await client.get(f"/v1/batch/jobs/{job_id}")).json()
            if job["completed_requests"] >= next_mark:
                samples.append((job["completed_requests"], rss_mb(pid)))
                next_mark += lines // 10
            if job["status"] not in ("QUEUED", "RUNNING"):
                break
            await asyncio.sleep(0.05)
        elapsed = time.perf_counter() - started
        assert job["status"] == "SUCCESS", job
        assert job["succeeded_requests"] == lines, job
        out = await client.get(f"/v1/files/{job['output_file']}/content")
        assert len(out.content.splitlines()) == lines
        samples.append((lines, rss_mb(pid)))
        return elapsed, samples


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--database-url", help="default: SQLite in a temporary data dir")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        extra = ("--database-url", args.database_url) if args.database_url else ()
        env = {
            "MAESTRALE_BATCH_CONCURRENCY": str(CONCURRENCY),
            "MAESTRALE_JOB_POLL_SECONDS": "0.05",
            "MAESTRALE_LOG_LEVEL": "WARNING",
        }
        proc, url = start_server(data, *extra, env=env)
        try:
            elapsed, samples = await through_batch(url, proc.pid, args.lines)
        finally:
            stop_server(proc)
    engine_seconds = await direct(args.lines)
    backend = "postgres" if args.database_url else "sqlite"
    print(
        f"batch of {args.lines} chat lines on the builtin engine ({backend}, {CONCURRENCY} at once)"
    )
    print(f"  through a batch job : {elapsed:7.2f} s  {args.lines / elapsed:9.0f} lines/s")
    rate = args.lines / engine_seconds
    print(f"  engine called directly: {engine_seconds:5.2f} s  {rate:9.0f} lines/s")
    print(f"  batch overhead per line: {(elapsed - engine_seconds) / args.lines * 1000:.3f} ms")
    print("  server RSS as the job progresses (lines done: MB):")
    print("    " + ", ".join(f"{n}: {mb:.1f}" for n, mb in samples))
    base = samples[0][1]
    print(
        f"  RSS growth: peak {max(mb for _, mb in samples) - base:+.1f} MB, "
        f"end {samples[-1][1] - base:+.1f} MB"
    )


if __name__ == "__main__":
    asyncio.run(main())
