"""Postgres' write of spans: one INSERT of column arrays (`unnest`), whose RETURNING names the
spans that were new, then one upsert of their traces' summaries that merges in SQL (counts
added, min start, max end, the root, the first and last LLM call, names united), so that no
summary is read first and writers of several replicas add up exactly. Rows are sorted by key
so that concurrent writers lock in the same order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import (
    JSON,
    BigInteger,
    Integer,
    and_,
    case,
    func,
    literal_column,
    or_,
)
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from maestrale.telemetry import summary
from maestrale.telemetry.summary import MAX_NAMES
from maestrale.telemetry.tables import TelemetrySpan, TelemetryTrace

Row = dict[str, Any]
_SPANS = TelemetrySpan.__table__
_COLUMNS = [c for c in _SPANS.columns if c.name != "id"]
_JSON = {c.name for c in _COLUMNS if isinstance(c.type, JSON)}
_INT = {c.name for c in _COLUMNS if isinstance(c.type, (BigInteger, Integer))}
_DEFAULTS = {
    c.name: c.default.arg for c in _COLUMNS if c.default is not None and not callable(c.default.arg)
}
_KEY = ("workspace_id", "trace_id", "span_id")
# The arrays are cast in the statement (no SQLAlchemy type on the parameters: its ARRAY type
# would visit every element in Python; asyncpg encodes them from the statement's types).
_SQL = sql_text(
    "INSERT INTO telemetry_spans ({names}) SELECT {values} FROM unnest({arrays}) AS u({names}) "
    "ON CONFLICT (workspace_id, trace_id, span_id) DO NOTHING "
    "RETURNING workspace_id, trace_id, span_id".format(
        names=", ".join(c.name for c in _COLUMNS),
        values=", ".join(
            f"u.{c.name}::jsonb" if c.name in _JSON else f"u.{c.name}" for c in _COLUMNS
        ),
        arrays=", ".join(
            f"CAST(:{c.name} AS {'bigint' if c.name in _INT else 'text'}[])" for c in _COLUMNS
        ),
    )
)


def _array(rows: Sequence[Row], name: str) -> list[Any]:
    """Column `name` of `rows` (JSON documents as their text)."""
    default = _DEFAULTS.get(name)
    if name not in _JSON:
        return [row.get(name, default) for row in rows]
    empty: Any = [] if name in ("events", "links") else {}
    dumps = orjson.dumps
    return [dumps(row.get(name) or empty).decode("utf-8") for row in rows]


async def write_spans(session: AsyncSession, rows: Sequence[Row]) -> int:
    """Insert the spans not stored yet and merge them into their traces' summaries. Flushes,
    never commits. Returns how many spans were new."""
    if not rows:
        return 0
    ordered = sorted(rows, key=lambda r: tuple(r[k] for k in _KEY))
    arrays = {c.name: _array(ordered, c.name) for c in _COLUMNS}
    stored = await session.execute(_SQL, arrays)
    new = {tuple(found) for found in stored}
    fresh: list[Row] = []
    for row in ordered:
        key = tuple(row[k] for k in _KEY)
        if key in new:
            new.discard(key)  # a span twice in the batch counts once
            fresh.append(row)
    if fresh:
        await _merge_traces(session, fresh)
    return len(fresh)


async def _merge_traces(session: AsyncSession, spans: list[Row]) -> None:
    deltas: dict[tuple[str, str], Row] = {}
    for span in sorted(spans, key=lambda s: s["start_ns"]):
        key = (span["workspace_id"], span["trace_id"])
        delta = deltas.get(key)
        if delta is None:
            delta = deltas[key] = summary.new_trace(span)
        summary.merge(delta, span)
    upsert = pg_insert(TelemetryTrace)
    await session.execute(
        upsert.on_conflict_do_update(
            index_elements=["workspace_id", "trace_id"], set_=_merged(upsert.excluded)
        ),
        [deltas[key] for key in sorted(deltas)],
    )


def _merged(new: Any) -> dict[str, Any]:
    """The SET of the upsert: the stored summary `t` (SET reads its old values) merged with the
    batch's `new` one, as summary.merge would."""
    t = TelemetryTrace.__table__.c
    start = func.least(t.start_ns, new.start_ns)
    end = func.greatest(t.end_ns, new.end_ns)
    brings_root = and_(new.root_span_id != "", t.root_span_id == "")
    first = and_(
        new.first_turn_ns != 0, or_(t.first_turn_ns == 0, new.first_turn_ns < t.first_turn_ns)
    )
    last = and_(new.last_turn_ns != 0, new.last_turn_ns >= t.last_turn_ns)
    merged: dict[str, Any] = {
        "start_ns": start,
        "end_ns": end,
        "duration_ns": end - start,
        "status_code": case((new.status_code == "Error", "Error"), else_=t.status_code),
        "root_span_id": case((t.root_span_id == "", new.root_span_id), else_=t.root_span_id),
        "root_span_name": case((t.root_span_id == "", new.root_span_name), else_=t.root_span_name),
        "environment": case((t.environment == "", new.environment), else_=t.environment),
        "models_used": _united("models_used"),
        "tools_used": _united("tools_used"),
    }
    for name in (
        "error_count",
        "span_count",
        "gen_ai_span_count",
        "llm_call_count",
        "tool_call_count",
        "retrieval_count",
        "evaluation_count",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ):
        merged[name] = t[name] + getattr(new, name)
    for name in ("service_name", "conversation_id", "workflow_name", "agent_id", "agent_name"):
        # The root's value, else the first one seen.
        takes = and_(getattr(new, name) != "", or_(t[name] == "", brings_root))
        merged[name] = case((takes, getattr(new, name)), else_=t[name])
    for turn, wins in (("first", first), ("last", last)):
        for name in (
            f"{turn}_turn_ns",
            f"{turn}_turn_last_input_message",
            f"{turn}_turn_last_output_message",
        ):
            merged[name] = case((wins, getattr(new, name)), else_=t[name])
    return merged


def _united(name: str) -> ColumnElement[Any]:
    """The distinct names of the stored and the new JSON array `name` (at most MAX_NAMES)."""
    return literal_column(
        f"(SELECT coalesce(jsonb_agg(n.v), '[]'::jsonb) FROM (SELECT DISTINCT v FROM "
        f"jsonb_array_elements_text(telemetry_traces.{name} || excluded.{name}) AS e(v) "
        f"LIMIT {MAX_NAMES}) AS n)"
    )
