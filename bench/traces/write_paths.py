"""Where the store's write time goes on Postgres, and what other write paths would give.

Decodes the batches once (the receiver's own functions), then writes them, one transaction per
batch, into a fresh database that already holds `--prefill` spans of the same workspace (a store
in use: the cost of a batch must not grow with the table), through:

- `store`: `maestrale.telemetry.repository.write_spans` (read the batch's stored span ids, insert
  the new ones ON CONFLICT DO NOTHING, read and upsert the trace summaries);
- `returning`: no read first: `INSERT ... ON CONFLICT DO NOTHING RETURNING` (SQLAlchemy Core,
  insertmanyvalues) tells which spans are new, then the same summary merge;
- `copy`: COPY (asyncpg, binary) into a temporary table, then `INSERT ... SELECT ... ON CONFLICT
  DO NOTHING RETURNING`, then the same summary merge.

Each prints spans/s and the time per statement kind (the rest is Python: rows, summaries,
SQLAlchemy). A prototype for the lead to choose from, not the server's code.

    .venv/bin/python -m bench.traces.write_paths [--batches 60] [--prefill 200000]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from bench.observability.generate import pg_dsn
from bench.traces.ingest import PG, fresh_database, time_statements
from bench.traces.search import INSERT
from bench.traces.spans import batches
from maestrale.core.db import Database, _json_dumps
from maestrale.core.migrate import upgrade
from maestrale.telemetry import repository, summary
from maestrale.telemetry.otlp.body import PROTOBUF, parse
from maestrale.telemetry.otlp.records import Owner
from maestrale.telemetry.otlp.spans import span_rows
from maestrale.telemetry.otlp.values import Limits
from maestrale.telemetry.tables import TelemetrySpan, TelemetryTrace

Row = dict[str, Any]
SPANS = TelemetrySpan.__table__
COLUMNS = [c.name for c in SPANS.columns if c.name != "id"]
JSON_COLUMNS = {"attributes", "resource_attributes", "events", "links"}
OWNER = Owner("bench-org", "bench-workspace")
RAW: dict[str, float] = {}  # the time of the statements run on the driver's connection


async def merge_traces(session: AsyncSession, fresh: list[Row]) -> None:
    """The store's own summary merge (read the traces, merge in Python, upsert)."""
    assert fresh, "no new span in the batch"
    traces = await repository._traces_of(session, fresh)
    for span in sorted(fresh, key=lambda s: s["start_ns"]):
        key = (span["workspace_id"], span["trace_id"])
        trace = traces.get(key)
        if trace is None:
            trace = traces[key] = summary.new_trace(span)
        summary.merge(trace, span)
    upsert = pg_insert(TelemetryTrace)
    keys = ("workspace_id", "trace_id")
    names = [c.name for c in TelemetryTrace.__table__.columns]
    await session.execute(
        upsert.on_conflict_do_update(
            index_elements=list(keys),
            set_={c: upsert.excluded[c] for c in names if c not in keys},
        ),
        list(traces.values()),
    )


def _fresh_of(rows: list[Row], new: set[tuple[str, str, str]]) -> list[Row]:
    return [r for r in rows if (r["workspace_id"], r["trace_id"], r["span_id"]) in new]


async def store(session: AsyncSession, rows: list[Row]) -> None:
    await repository.write_spans(session, rows)


async def returning(session: AsyncSession, rows: list[Row]) -> None:
    stmt = (
        pg_insert(TelemetrySpan)
        .on_conflict_do_nothing(index_elements=["workspace_id", "trace_id", "span_id"])
        .returning(SPANS.c.workspace_id, SPANS.c.trace_id, SPANS.c.span_id)
    )
    result = await session.execute(stmt, rows)
    new = {(w, t, s) for w, t, s in result}
    await merge_traces(session, _fresh_of(rows, new))


async def copy(session: AsyncSession, rows: list[Row]) -> None:
    # A first statement through SQLAlchemy opens the transaction on the driver's connection
    # (the raw statements below would otherwise each commit: the staging table would empty).
    await session.execute(text("SELECT 1"))
    conn = await session.connection()
    raw = (await conn.get_raw_connection()).driver_connection
    assert raw is not None
    await raw.execute(
        "CREATE TEMP TABLE IF NOT EXISTS bench_stage "
        "(LIKE telemetry_spans INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
    )
    records = [
        tuple(_json_dumps(r[c]) if c in JSON_COLUMNS else r[c] for c in COLUMNS) for r in rows
    ]
    started = time.perf_counter()
    await raw.copy_records_to_table("bench_stage", records=records, columns=COLUMNS)
    RAW["COPY bench_stage"] = RAW.get("COPY bench_stage", 0.0) + time.perf_counter() - started
    names = ", ".join(COLUMNS)
    started = time.perf_counter()
    found = await raw.fetch(
        f"INSERT INTO telemetry_spans ({names}) SELECT {names} FROM bench_stage "
        "ON CONFLICT (workspace_id, trace_id, span_id) DO NOTHING "
        "RETURNING workspace_id, trace_id, span_id"
    )
    key = "INSERT telemetry_spans SELECT (staged)"
    RAW[key] = RAW.get(key, 0.0) + time.perf_counter() - started
    new = {(r[0], r[1], r[2]) for r in found}
    await merge_traces(session, _fresh_of(rows, new))


async def prefill(url: str, count: int) -> None:
    import asyncpg

    conn = await asyncpg.connect(pg_dsn(url))
    try:
        start = time.time_ns() - 30 * 86_400 * 10**9
        # 60% in the bench workspace, the rest in four others (bench.traces.search's rows).
        org, ws = OWNER.organization_id, OWNER.workspace_id
        await conn.execute(INSERT, 0, count - 1, org, ws, start, 10**6)
        await conn.execute("ANALYZE telemetry_spans")
    finally:
        await conn.close()


async def run(url: str, name: str, decoded: list[list[Row]]) -> None:
    spent = RAW
    spent.clear()
    db = Database(url, pool_size=2)
    time_statements(db.engine.sync_engine, spent)
    write = {"store": store, "returning": returning, "copy": copy}[name]
    spans = sum(len(rows) for rows in decoded)
    try:
        started = time.perf_counter()
        for rows in decoded:
            async with db.transaction() as work:
                await write(work.session, rows)
        seconds = time.perf_counter() - started
    finally:
        await db.dispose()
    print(f"  {name:<10} {spans / seconds:9,.0f} spans/s  ({seconds:.2f} s)")
    for kind, value in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"    {kind:<40} {value:6.2f} s  ({100 * value / seconds:4.1f}%)")
    rest = seconds - sum(spent.values())
    print(f"    {'the rest (Python: rows, summaries, SQLAlchemy)':<40} {rest:6.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--prefill", type=int, default=200_000)
    parser.add_argument("--paths", default="store,returning,copy")
    parser.add_argument("--pg", default=PG)
    args = parser.parse_args()
    bodies = batches(args.batches, args.size)
    now = time.time_ns()
    decoded = []
    for data in bodies:
        message = parse("traces", data, PROTOBUF)
        assert isinstance(message, ExportTraceServiceRequest)
        decoded.append(span_rows(message, OWNER, Limits(), now).rows)
    for name in args.paths.split(","):
        url = fresh_database("postgres", args.pg, Path("/tmp"))
        upgrade(url)
        if args.prefill:
            asyncio.run(prefill(url, args.prefill))
        print(f"postgres, {args.prefill} spans already stored:")
        asyncio.run(run(url, name, decoded))


if __name__ == "__main__":
    main()
