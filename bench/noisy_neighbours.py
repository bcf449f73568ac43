"""A's one-input embeddings call while B ingests documents, on the local e5 engine.

B floods as library ingestion does: each document's chunks embedded in requests of 64 texts,
4 requests at a time per document, all documents at once. Once B's requests are queued, A asks
for one vector; the bench prints A's latency and how long B's flood took, in two modes:

- `one-queue`: every call under the same share, one turn per request (64 texts): the engine's
  queue as it was before issue 30 (one FIFO for every tenant, a request embedded in one go);
- `fair`: B's requests as its workspace's batch work, A's as another workspace's interactive
  call, a turn per `batch_size` texts (the engine's default, 32): what the server does now.

    .venv/bin/python -m bench.noisy_neighbours [--documents 3] [--chunks 100] [--runs 3]

A chunk is ~1,000 characters of Markdown (a 200 KB document makes ~200). The figures are for
reading: nothing asserts on them.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from maestrale.core.fair import BATCH, INTERACTIVE, Share, reset_current, set_current
from maestrale.engines.local.e5 import E5Engine, E5Options
from maestrale.engines.types import EmbeddingRequest

REQUEST_TEXTS, PER_DOCUMENT = 64, 4  # as libraries/ingest/embedding.py (BATCH, CONCURRENCY)
PARAGRAPH = (
    "## Section {n}\n\nThe quarterly report of team {n} describes the migration of the ingestion "
    "pipeline, the new retention rules, and the incidents of the period with their causes. "
)


def chunk(document: int, n: int) -> str:
    text = PARAGRAPH.format(n=f"{document}-{n}")
    return (text * (1000 // len(text) + 1))[:1000]


async def embed(engine: E5Engine, share: Share, texts: list[str]) -> None:
    shared = set_current(share)
    try:
        await engine.embed(EmbeddingRequest(model="e5", inputs=texts))
    finally:
        reset_current(shared)


async def ingest(engine: E5Engine, share: Share, document: int, chunks: int) -> None:
    texts = [chunk(document, n) for n in range(chunks)]
    gate = asyncio.Semaphore(PER_DOCUMENT)

    async def one(start: int) -> None:
        async with gate:
            await embed(engine, share, texts[start : start + REQUEST_TEXTS])

    await asyncio.gather(*(one(start) for start in range(0, chunks, REQUEST_TEXTS)))


async def run(mode: str, documents: int, chunks: int) -> tuple[float, float]:
    """(A's latency, B's flood duration) in seconds."""
    fair = mode == "fair"
    engine = E5Engine(E5Options(batch_size=32 if fair else REQUEST_TEXTS, max_queue=10_000))
    await engine.load()
    b = Share("workspace-b", BATCH) if fair else Share()
    a = Share("workspace-a", INTERACTIVE) if fair else Share()
    try:
        began = time.perf_counter()
        flood = [asyncio.create_task(ingest(engine, b, d, chunks)) for d in range(documents)]
        queued = documents * min(PER_DOCUMENT, -(-chunks // REQUEST_TEXTS))
        for _ in range(100_000):  # until B's first requests are all in the engine's queue
            if engine.pending >= queued:
                break
            await asyncio.sleep(0.001)
        asked = time.perf_counter()
        await embed(engine, a, ["how do I reset my password?"])
        latency = time.perf_counter() - asked
        await asyncio.gather(*flood)
        return latency, time.perf_counter() - began
    finally:
        await engine.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=100, help="chunks per document")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"B: {args.documents} documents x {args.chunks} chunks of 1,000 characters; A: 1 input")
    results: dict[str, list[tuple[float, float]]] = {"one-queue": [], "fair": []}
    for _ in range(args.runs):  # interleaved: the machine's noise hits both alike
        for mode in results:
            results[mode].append(await run(mode, args.documents, args.chunks))
    for mode, runs in results.items():
        latency = statistics.median(r[0] for r in runs)
        flood = statistics.median(r[1] for r in runs)
        print(f"{mode:>10}: A's call {latency * 1000:8.0f} ms   B's flood {flood:6.1f} s")


if __name__ == "__main__":
    asyncio.run(main())
