"""The telemetry store's writes: spans and logs in bulk, the trace summaries they change, and the
purge of old records. Every row carries its workspace; every read here is scoped by it.

Idempotent: a span already stored (a retried export) is neither written again nor counted again
in its trace's summary. On Postgres (`postgres_write.py`) the spans go in as one INSERT of
arrays whose RETURNING names the new ones, and their traces' summaries are merged by the upsert
itself (no read: writers of several replicas add up exactly). On SQLite (one writer) the stored
span ids are read first (one query per workspace and chunk of trace ids), the summaries read,
merged in Python and upserted."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import delete, insert, select, tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.telemetry import postgres_write, summary
from maestrale.telemetry.tables import TelemetryLog, TelemetrySpan, TelemetryTrace

Row = dict[str, Any]
_CHUNK = 500  # trace ids per IN list
_TRACE_COLUMNS = [c.name for c in TelemetryTrace.__table__.columns]
_TRACE_KEYS = ("workspace_id", "trace_id")


def _dialect(session: AsyncSession) -> Any:
    return postgresql if session.get_bind().dialect.name == "postgresql" else sqlite


def _chunks(items: Sequence[str], size: int = _CHUNK) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


async def write_spans(session: AsyncSession, rows: Sequence[Row]) -> int:
    """Insert the spans not stored yet (one executemany) and merge them into their traces'
    summaries (read in one query per workspace and chunk, upserted in one executemany). Flushes,
    never commits. Returns how many spans were new."""
    if session.get_bind().dialect.name == "postgresql":
        return await postgres_write.write_spans(session, rows)
    fresh = await _new_spans(session, rows)
    if not fresh:
        return 0
    dialect_insert = _dialect(session).insert
    await session.execute(
        dialect_insert(TelemetrySpan).on_conflict_do_nothing(
            index_elements=["workspace_id", "trace_id", "span_id"]
        ),
        fresh,
    )
    traces = await _traces_of(session, fresh)
    for span in sorted(fresh, key=lambda s: s["start_ns"]):
        key = (span["workspace_id"], span["trace_id"])
        trace = traces.get(key)
        if trace is None:
            trace = traces[key] = summary.new_trace(span)
        summary.merge(trace, span)
    upsert = dialect_insert(TelemetryTrace)
    await session.execute(
        upsert.on_conflict_do_update(
            index_elements=list(_TRACE_KEYS),
            set_={c: upsert.excluded[c] for c in _TRACE_COLUMNS if c not in _TRACE_KEYS},
        ),
        list(traces.values()),
    )
    return len(fresh)


async def _new_spans(session: AsyncSession, rows: Sequence[Row]) -> list[Row]:
    """The rows whose (workspace, trace, span) is neither stored nor earlier in `rows`."""
    seen: set[tuple[str, str, str]] = set()
    for workspace, trace_ids in _by_workspace(rows).items():
        for chunk in _chunks(trace_ids):
            stored = await session.execute(
                select(TelemetrySpan.trace_id, TelemetrySpan.span_id).where(
                    TelemetrySpan.workspace_id == workspace, TelemetrySpan.trace_id.in_(chunk)
                )
            )
            seen.update((workspace, t, s) for t, s in stored)
    fresh: list[Row] = []
    for row in rows:
        key = (row["workspace_id"], row["trace_id"], row["span_id"])
        if key not in seen:
            seen.add(key)
            fresh.append(row)
    return fresh


def _by_workspace(rows: Iterable[Row]) -> dict[str, list[str]]:
    found: dict[str, dict[str, None]] = {}
    for row in rows:
        found.setdefault(row["workspace_id"], {})[row["trace_id"]] = None
    return {workspace: list(ids) for workspace, ids in found.items()}


async def _traces_of(session: AsyncSession, spans: Sequence[Row]) -> dict[tuple[str, str], Row]:
    """The stored summaries of the spans' traces, as dicts keyed by (workspace, trace id)."""
    traces: dict[tuple[str, str], Row] = {}
    table = TelemetryTrace.__table__
    for workspace, trace_ids in _by_workspace(spans).items():
        for chunk in _chunks(trace_ids):
            result = await session.execute(
                select(table).where(
                    tuple_(table.c.workspace_id, table.c.trace_id).in_(
                        [(workspace, t) for t in chunk]
                    )
                )
            )
            for found in result.mappings():
                row = dict(found)
                row["models_used"] = list(row["models_used"] or [])
                row["tools_used"] = list(row["tools_used"] or [])
                traces[(row["workspace_id"], row["trace_id"])] = row
    return traces


async def write_logs(session: AsyncSession, rows: Sequence[Row]) -> int:
    """Insert log records (one executemany). Flushes, never commits. A log record has no id of
    its own in OTLP: a retried export stores its records again."""
    if not rows:
        return 0
    await session.execute(insert(TelemetryLog), list(rows))
    return len(rows)


async def purge(session: AsyncSession, before_ns: int, limit: int) -> int:
    """Delete what is older than `before_ns` (every workspace: retention is the server's), at
    most `limit` rows of each table; returns how many rows went. Spans and logs are read in
    arrival order (their primary key), the oldest `limit` of them, so that no time index across
    workspaces is needed: a record that arrived long after its time waits for the records that
    arrived before it to expire."""
    deleted = 0
    for key, moment in (
        (TelemetrySpan.id, TelemetrySpan.start_ns),
        (TelemetryLog.id, TelemetryLog.timestamp_ns),
    ):
        oldest = select(key, moment).order_by(key).limit(limit).subquery()
        ids = select(oldest.c[0]).where(oldest.c[1] < before_ns).scalar_subquery()
        result = await session.execute(delete(key.table).where(key.in_(ids)))
        deleted += int(getattr(result, "rowcount", 0) or 0)
    old = (
        select(TelemetryTrace.workspace_id, TelemetryTrace.trace_id)
        .where(TelemetryTrace.end_ns < before_ns)
        .limit(limit)
    )
    keys = [(w, t) for w, t in await session.execute(old)]
    if keys:
        result = await session.execute(
            delete(TelemetryTrace).where(
                tuple_(TelemetryTrace.workspace_id, TelemetryTrace.trace_id).in_(keys)
            )
        )
        deleted += int(getattr(result, "rowcount", 0) or 0)
    return deleted
