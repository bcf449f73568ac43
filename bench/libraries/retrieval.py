"""Retrieval benchmark of document libraries: the latency of a hybrid search (the index's
`search`: vector ranking + keyword ranking, reciprocal rank fusion, hits read back) over
100,000 chunks, on SQLite (sqlite-vec) and on Postgres.

    .venv/bin/python -m bench.libraries.retrieval [--quick] [--chunks N] [--dim D]
        [--queries Q] [--postgres URL]

The corpus (one per backend, in a scratch database, written through `replace_document`):
N chunks (100,000) of D dimensions (384, like e5-small): random unit vectors, and ~100 words
of generated text each, drawn from a Zipf law over 20,000 made-up words (a few words are in
most chunks, as "the" is in real text). Half the chunks are in one library, the other half in
ten libraries of N/20 each. Each search (a session of its own, `limit` 8) asks for the words
of a query (4-6 words drawn from the same law) and a vector near one chunk's, over:
- all eleven libraries (the N chunks),
- the big library (N/2 chunks),
- one small library (N/20 chunks),
- five small libraries (N/4 chunks).
Printed: p50/p95/p99 (ms) per scope, and, for the N chunks, each side alone; SQLite as
Maestrale opens it, then with `PRAGMA mmap_size=1GiB` (not set by Maestrale: the figures say
what it would bring), then with sqlite-vec kept out of the connections (the exact-scan
fallback). On this machine's Postgres pgvector is not installed: its vector side is the exact
scan, reading the vectors of the scope from the database on every search (the log says so,
the table names the store). The exact scans run fewer searches (40). The peer: a plain NumPy
scan of the same vectors held in memory (no database: the floor of an exact scan).
Target: p50 <= 50 ms.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bench.harness import percentile, run_main
from maestrale.core.db import create_engine
from maestrale.core.migrate import upgrade_async
from maestrale.libraries import index
from maestrale.libraries.index import exact, keyword
from maestrale.libraries.index import vectors as vector_tables
from maestrale.libraries.index.capability import connection_backend

MODEL = "bench-e5-small"
LIMIT = 8
VOCABULARY = 20_000
WORDS_PER_CHUNK = 100
CHUNKS_PER_DOCUMENT = 100
TARGET_MS = 50.0
SLOW_SEARCHES = 40


@dataclass(frozen=True)
class Chunk:
    index: int
    page: int
    start: int
    end: int
    text: str


@dataclass
class Corpus:
    vectors: NDArray[np.float32]
    texts: list[str]
    library_of: list[str]  # per chunk
    big: str
    small: list[str]
    vocabulary: list[str]
    weights: NDArray[np.floating[Any]]


def make_corpus(chunks: int, dim: int, seed: int = 0) -> Corpus:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocabulary = sorted(
        {"".join(rng.choice(letters, size=int(rng.integers(2, 11)))) for _ in range(VOCABULARY)},
        key=lambda w: (len(w), w),
    )
    weights = 1.0 / np.arange(1, len(vocabulary) + 1) ** 1.07
    weights /= weights.sum()
    words = np.array(vocabulary, dtype=object)
    drawn = rng.choice(len(vocabulary), size=(chunks, WORDS_PER_CHUNK), p=weights)
    texts = [" ".join(words[row]) for row in drawn]
    vectors = rng.standard_normal((chunks, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    big, small = str(uuid.uuid4()), [str(uuid.uuid4()) for _ in range(10)]
    half = chunks // 2
    per_small = max(1, (chunks - half) // 10)
    library_of = [big] * half + [small[min(9, i // per_small)] for i in range(chunks - half)]
    return Corpus(vectors, texts, library_of, big, small, vocabulary, weights)


async def load(sessions: async_sessionmaker[AsyncSession], corpus: Corpus) -> float:
    """Write the corpus, a document of CHUNKS_PER_DOCUMENT chunks at a time: seconds taken."""
    started = time.perf_counter()
    org, workspace = str(uuid.uuid4()), str(uuid.uuid4())
    total = len(corpus.texts)
    position = 0
    while position < total:
        library = corpus.library_of[position]
        end = position
        while (
            end < total
            and end - position < CHUNKS_PER_DOCUMENT
            and corpus.library_of[end] == library
        ):
            end += 1
        chunks = [
            Chunk(i - position, 1, 0, len(corpus.texts[i]), corpus.texts[i])
            for i in range(position, end)
        ]
        async with sessions.begin() as session:
            await index.replace_document(
                session,
                organization_id=org,
                workspace_id=workspace,
                library_id=library,
                document_id=str(uuid.uuid4()),
                chunks=chunks,
                vectors=corpus.vectors[position:end],
                model=MODEL,
            )
        position = end
        if position % 20_000 < CHUNKS_PER_DOCUMENT:
            print(f"  {position} chunks written", file=sys.stderr)
    return time.perf_counter() - started


@dataclass(frozen=True)
class Query:
    text: str
    vector: NDArray[np.float32]


def make_queries(corpus: Corpus, count: int, seed: int = 1) -> list[Query]:
    rng = np.random.default_rng(seed)
    queries = []
    for _ in range(count):
        size = int(rng.integers(4, 7))
        words = rng.choice(len(corpus.vocabulary), size=size, p=corpus.weights)
        target = corpus.vectors[int(rng.integers(len(corpus.vectors)))]
        noise = rng.standard_normal(target.shape) * 0.3 / np.sqrt(target.shape[0])
        near = (target + noise).astype(np.float32)
        queries.append(Query(" ".join(corpus.vocabulary[w] for w in words), near))
    return queries


Timed = Callable[[Query], Awaitable[Any]]


async def timings(call: Timed, queries: list[Query], warmup: int) -> list[float]:
    for query in queries[:warmup]:
        await call(query)
    out = []
    for query in queries[warmup:]:
        started = time.perf_counter()
        await call(query)
        out.append((time.perf_counter() - started) * 1000)
    return out


def row(label: str, values: list[float], note: str = "") -> str:
    p50, p95, p99 = (percentile(values, q) for q in (50, 95, 99))
    return f"{label:<52} {p50:>7.1f} {p95:>7.1f} {p99:>7.1f}  {note}"


async def measure(
    name: str,
    engine: AsyncEngine,
    corpus: Corpus,
    queries: list[Query],
    warmup: int,
    *,
    write: bool = True,
    analyze: bool = False,
) -> list[str]:
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    async with sessions() as session:
        backend, _ = await connection_backend(await session.connection())
    lines = [f"{name}: vector store {backend.value}"]
    if write:
        seconds = await load(sessions, corpus)
        lines.append(f"  written: {len(corpus.texts)} chunks in {seconds:.1f} s")
    if analyze:  # what autovacuum does soon after a bulk load (the planner's, and the
        # keyword side's, statistics)
        async with sessions.begin() as session:
            await session.execute(text("ANALYZE library_chunks"))
    everything = [corpus.big, *corpus.small]
    scopes = [
        (f"all 11 libraries ({len(corpus.texts)} chunks)", everything),
        (f"the big library ({corpus.library_of.count(corpus.big)} chunks)", [corpus.big]),
        (
            f"one small library ({corpus.library_of.count(corpus.small[0])} chunks)",
            corpus.small[:1],
        ),
        ("five small libraries", corpus.small[:5]),
    ]
    head = f"  {'hybrid search, limit 8':<50} {'p50':>7} {'p95':>7} {'p99':>7}  (ms)"
    lines += [head, "  " + "-" * (len(head) - 2)]
    for label, libraries in scopes:

        async def hybrid(query: Query, libraries: list[str] = libraries) -> None:
            async with sessions() as session:
                hits = await index.search(
                    session,
                    library_ids=libraries,
                    query=query.text,
                    vector=query.vector,
                    model=MODEL,
                    limit=LIMIT,
                )
                assert hits, "a search found nothing"

        values = await timings(hybrid, queries, warmup)
        verdict = ""
        if libraries is everything:
            verdict = "target met" if percentile(values, 50) <= TARGET_MS else "target NOT met"
        lines.append("  " + row(label, values, verdict))

    n = 4 * LIMIT if 4 * LIMIT > 50 else 50

    async def vector_side(query: Query) -> None:
        async with sessions() as session:
            backend, version = await connection_backend(await session.connection())
            unit = query.vector / np.linalg.norm(query.vector)
            if vector_tables.supports(backend, unit.shape[0]):
                await vector_tables.nearest(
                    session, backend, version, library_ids=everything, model=MODEL, query=unit, n=n
                )
            else:
                await exact.nearest(session, library_ids=everything, model=MODEL, query=unit, n=n)

    async def keyword_side(query: Query) -> None:
        async with sessions() as session:
            await keyword.ranking(session, library_ids=everything, query=query.text, n=n)

    lines.append(
        "  "
        + row("  of which the vector side alone (all)", await timings(vector_side, queries, warmup))
    )
    lines.append(
        "  "
        + row(
            "  of which the keyword side alone (all)", await timings(keyword_side, queries, warmup)
        )
    )
    return lines


def numpy_peer(corpus: Corpus, queries: list[Query], warmup: int) -> list[str]:
    """The floor of an exact scan: the vectors already in memory, one matrix product."""
    matrix = corpus.vectors
    values = []
    for i, query in enumerate(queries):
        started = time.perf_counter()
        scores = matrix @ query.vector
        top = np.argpartition(-scores, 50)[:50]
        top[np.argsort(-scores[top])]
        if i >= warmup:
            values.append((time.perf_counter() - started) * 1000)
    return [
        "peer: NumPy, vectors held in memory (no database, no keywords)",
        "  " + row(f"exact top-50 over {len(matrix)} vectors", values),
    ]


async def create_postgres(admin_url: str) -> str:
    import asyncpg

    dsn = admin_url.replace("postgresql+asyncpg://", "postgresql://", 1)
    name = f"maestrale_retrieval_{uuid.uuid4().hex[:10]}"
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    base = admin_url.rsplit("/", 1)[0]
    return f"{base}/{name}"


async def drop_postgres(admin_url: str, url: str) -> None:
    import asyncpg

    dsn = admin_url.replace("postgresql+asyncpg://", "postgresql://", 1)
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    finally:
        await conn.close()


def with_mmap(engine: AsyncEngine, size: int) -> AsyncEngine:
    """`engine`, its SQLite connections reading the file through a memory map of `size` bytes
    (`PRAGMA mmap_size`: pages read from the OS's cache in place, not copied into SQLite's)."""

    def on_connect(dbapi_conn: Any, _: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA mmap_size={int(size)}")
        cursor.close()

    event.listen(engine.sync_engine, "connect", on_connect)
    return engine


async def run(args: argparse.Namespace, tmp: Path) -> list[str]:
    chunks = 10_000 if args.quick else args.chunks
    count = 60 if args.quick else args.queries
    warmup = 10 if args.quick else 20
    print(f"generating {chunks} chunks of {args.dim} dimensions", file=sys.stderr)
    corpus = make_corpus(chunks, args.dim)
    queries = make_queries(corpus, count + warmup)
    # The exact scans read every vector of the scope on every search: fewer searches.
    slow = queries[: warmup + min(count, SLOW_SEARCHES)]
    lines = [
        f"retrieval over {chunks} chunks, {args.dim} dimensions, limit {LIMIT}, "
        f"{count} searches after {warmup} of warm-up ({len(slow) - warmup} where the vectors "
        f"are scanned exactly); target p50 <= {TARGET_MS:g} ms",
        "",
    ]
    url = f"sqlite+aiosqlite:///{tmp / 'retrieval.sqlite'}"
    await upgrade_async(url)
    variants = [
        ("SQLite", create_engine(url), queries, True),
        ("SQLite, PRAGMA mmap_size=1GiB", with_mmap(create_engine(url), 2**30), queries, False),
        (
            "SQLite, sqlite-vec kept out (the fallback)",
            create_engine(url, load_extensions=False),
            slow,
            False,
        ),
    ]
    for name, engine, asked, write in variants:
        print(f"{name}: {'writing' if write else 'searching'}", file=sys.stderr)
        try:
            lines += [*await measure(name, engine, corpus, asked, warmup, write=write), ""]
        finally:
            await engine.dispose()
    if args.postgres:
        pg_url = await create_postgres(args.postgres)
        try:
            await upgrade_async(pg_url)
            pg = create_engine(pg_url)
            try:
                print("Postgres: writing", file=sys.stderr)
                lines += [*await measure("Postgres", pg, corpus, slow, warmup, analyze=True), ""]
            finally:
                await pg.dispose()
        finally:
            await drop_postgres(args.postgres, pg_url)
    return lines + numpy_peer(corpus, queries, warmup)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="10,000 chunks, 60 searches")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--postgres", help="an admin URL of a Postgres server (a scratch database is made)"
    )
    return run_main(run, parser.parse_args(), "maestrale-retrieval-")


if __name__ == "__main__":
    raise SystemExit(main())
