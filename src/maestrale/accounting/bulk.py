"""Bulk inserts of accounting rows: one statement per batch, its rows as ONE JSON array parameter
that the database unpacks itself (`json_each` on SQLite, `json_populate_recordset` on Postgres).

Why not an `executemany`: SQLAlchemy processes every bound value of every row in Python, on the
event loop's thread (~25 µs a row: a batch of 500 rows held the loop for 13 ms), and on SQLite
the driver then binds and steps row by row, taking and giving back the GIL twice a row while the
loop wants it (each switch up to `sys.getswitchinterval()`, 5 ms). Here the Python side is one
orjson call per row and the database does the rest with the GIL released.

The stored values are the ones SQLAlchemy would store: column defaults filled in for missing
keys, JSON columns as JSON, datetimes as SQLAlchemy's SQLite text format (SQLite) or RFC 3339
(Postgres `timestamptz`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import JSON, Table

# Rows per statement and JSON bytes per statement (whichever comes first): bounds the time one
# batch holds a thread (serialising, then the database's work on it) and the memory of its text.
BATCH_ROWS = 256
BATCH_BYTES = 1 << 20


class BulkInsert:
    """The bulk insert of one table, for both dialects."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.columns = [column.name for column in table.columns]
        self._json = {c.name for c in table.columns if isinstance(c.type, JSON)}
        self._defaults: dict[str, Callable[[], Any]] = {}
        for column in table.columns:
            default = column.default
            if default is None:
                self._defaults[column.name] = _constant(None)
            elif getattr(default, "is_callable", False):
                self._defaults[column.name] = _called(default.arg)  # type: ignore[attr-defined]
            elif getattr(default, "is_scalar", False):
                self._defaults[column.name] = _constant(default.arg)  # type: ignore[attr-defined]
        names = ", ".join(self.columns)
        picked = ", ".join(
            f"value -> '$.{name}'" if name in self._json else f"value ->> '$.{name}'"
            for name in self.columns
        )
        # SQLite's JSON: `->` gives JSON text (the JSON columns), `->>` an SQL value.
        self.sqlite_sql = f"INSERT INTO {table.name} ({names}) SELECT {picked} FROM json_each(?)"
        self.postgres_sql = (
            f"INSERT INTO {table.name} ({names}) SELECT {names} "
            f"FROM json_populate_recordset(CAST(NULL AS {table.name}), CAST(:rows AS json))"
        )

    def complete(self, row: dict[str, Any]) -> dict[str, Any]:
        """`row` with the column defaults of its missing keys (as SQLAlchemy's insert would)."""
        if len(row) >= len(self.columns) and all(name in row for name in self.columns):
            return row
        full = {name: factory() for name, factory in self._defaults.items() if name not in row}
        full.update(row)
        return full

    def dumps(self, row: dict[str, Any], *, sqlite: bool) -> bytes:
        """One row as JSON (raises what orjson raises: the row's fault, never the database's)."""
        row = self.complete(row)
        if sqlite:
            row = {k: _sqlite_datetime(v) if isinstance(v, datetime) else v for k, v in row.items()}
        return orjson.dumps(row, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_NAIVE_UTC)


def batches(bulk: BulkInsert, rows: list[dict[str, Any]], *, sqlite: bool) -> Iterator[str]:
    """The JSON array texts of `rows`, at most BATCH_ROWS rows and about BATCH_BYTES bytes
    each. Raises what serialising a row raises."""
    parts: list[bytes] = []
    size = 0
    for row in rows:
        data = bulk.dumps(row, sqlite=sqlite)
        if parts and (len(parts) >= BATCH_ROWS or size + len(data) > BATCH_BYTES):
            yield _array(parts)
            parts, size = [], 0
        parts.append(data)
        size += len(data) + 1
    if parts:
        yield _array(parts)


def _array(rows: list[bytes]) -> str:
    return (b"[" + b",".join(rows) + b"]").decode()


def _sqlite_datetime(value: datetime) -> str:
    # SQLAlchemy's SQLite DATETIME text (microseconds always written), the wall time as given.
    return value.isoformat(" ", "microseconds")[:26]


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


def _called(factory: Callable[[Any], Any]) -> Callable[[], Any]:
    # SQLAlchemy wraps a default callable to take the execution context; ours ignore it.
    return lambda: factory(None)
