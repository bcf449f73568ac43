"""The background writer: rows the database refuses never block the rows behind them, and
closing it in the middle of a write loses nothing."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from maestrale.accounting.recorder import Recorder
from maestrale.accounting.tables import ChatCompletionEvent, UsageRecord
from maestrale.core.clock import utcnow
from maestrale.core.db import Database

pytestmark = pytest.mark.both_databases()


def _usage(model: str) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "organization_id": "o",
        "workspace_id": "w",
        "model": model,
        "endpoint": "chat",
        "source": "api",
        "prompt_tokens": 1,
        "completion_tokens": 1,
        "total_tokens": 2,
        "cost": 0.0,
        "latency_ms": 1.0,
        "status_code": 200,
        "correlation_id": "c",
        "created_at": utcnow(),
    }


def _event(text: str) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "organization_id": "o",
        "workspace_id": "w",
        "correlation_id": "c",
        "source": "api",
        "model": "m",
        "status_code": 200,
        "latency_ms": 1.0,
        "request_messages": [{"role": "user", "content": text}],
        "response_messages": [],
        "enabled_tools": [],
        "nb_input_tokens": 1,
        "nb_output_tokens": 0,
        "nb_messages": 1,
        "extra_fields": {"note": text},
        "created_at": utcnow(),
    }


async def _count(db: Database, table: Any) -> int:
    async with db.transaction() as work:
        return int(
            (await work.session.execute(select(func.count()).select_from(table))).scalar_one()
        )


async def test_nul_characters_do_not_poison_the_buffer(db: Database) -> None:
    recorder = Recorder(db)
    recorder.record(_usage("fine"), _event("fine"))
    recorder.record(_usage("nul\x00model"), _event("nul \x00 content"))
    recorder.record(_usage("after"), _event("after"))
    await recorder.flush()
    assert recorder.pending == 0
    assert await _count(db, UsageRecord) == 3
    assert await _count(db, ChatCompletionEvent) == 3
    recorder.record(_usage("next"), None)
    await recorder.flush()
    assert await _count(db, UsageRecord) == 4


async def test_rows_wait_for_an_unreachable_database(db: Database) -> None:
    recorder = Recorder(Database("sqlite+aiosqlite:////nonexistent-dir/x.db"))
    recorder.record(_usage("kept"), _event("kept"))
    with contextlib.suppress(Exception):
        await recorder.flush()
    assert recorder.pending == 2
    await recorder.db.dispose()


async def test_closing_during_a_background_write_loses_no_row(db: Database) -> None:
    """`close()` cancels the background task; a write it was making is finished, not cut short
    (its rows were out of the buffer: cancelled, they were lost, and on SQLite the connection
    could keep the write lock that the last flush then waited on)."""
    recorder = Recorder(db, interval=0.01)
    writing = asyncio.Event()
    write = recorder._write

    async def slow_write(usage: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        writing.set()
        await asyncio.sleep(0.2)  # the close comes now
        await write(usage, events)

    recorder._write = slow_write  # type: ignore[method-assign]
    recorder.start()
    recorder.record(_usage("first"), _event("first"))
    await asyncio.wait_for(writing.wait(), 5)
    recorder.record(_usage("second"))  # buffered meanwhile: written by close()
    await recorder.close()
    assert await _count(db, UsageRecord) == 2
    assert await _count(db, ChatCompletionEvent) == 1
    assert recorder.pending == 0


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"a": value}
    return value


POISONS: dict[str, Any] = {"deep": _nested(300), "huge_int": 2**64, "surrogate": "bad \ud800"}


@pytest.mark.parametrize("poison", sorted(POISONS))
async def test_a_row_that_cannot_be_serialised_does_not_stop_accounting(
    db: Database, poison: str
) -> None:
    """Rows no JSON column can take (orjson refuses them: not a database error) are isolated:
    every other row is written, the bad one scrubbed (or dropped) and counted."""
    recorder = Recorder(db)
    recorder.record(_usage("before"), _event("before"))
    bad = _event("poisoned")
    bad["extra_fields"] = {"metadata": {"k": POISONS[poison]}}
    recorder.record(_usage("poisoned"), bad)
    recorder.record(_usage("after"), _event("after"))
    await recorder.flush()
    assert recorder.pending == 0
    assert await _count(db, UsageRecord) == 3
    assert await _count(db, ChatCompletionEvent) == 3  # the bad one scrubbed
    assert recorder.rejected[("events", "scrubbed")] == 1
    assert recorder.rejected[("usage", "scrubbed")] == 0
    recorder.record(_usage("next"), _event("next"))  # and the next tick is fine
    await recorder.flush()
    assert await _count(db, UsageRecord) == 4


async def test_a_row_that_cannot_be_written_at_all_is_dropped_and_counted(db: Database) -> None:
    recorder = Recorder(db)
    rows = [_event(str(i)) for i in range(7)]
    rows[4]["extra_fields"] = {"not json": object()}  # no scrub makes this storable
    for row in rows:
        recorder.record(_usage("m"), row)
    await recorder.close()  # the shutdown flush loses nobody else's rows either
    assert recorder.pending == 0
    assert await _count(db, UsageRecord) == 7
    assert await _count(db, ChatCompletionEvent) == 6
    assert recorder.rejected[("events", "dropped")] == 1


async def test_an_outage_while_isolating_keeps_the_rows(db: Database) -> None:
    recorder = Recorder(db)
    bad = _event("poisoned")
    bad["extra_fields"] = {"k": 2**64}
    recorder.record(_usage("a"), _event("a"))
    recorder.record(_usage("b"), bad)
    write = recorder._write
    calls = 0

    async def outage_after_first(usage: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise OperationalError("INSERT", {}, ConnectionRefusedError("database down"))
        await write(usage, events)

    recorder._write = outage_after_first  # type: ignore[method-assign]
    with pytest.raises(OperationalError):
        await recorder.flush()
    assert recorder.pending == 4  # nothing lost, nothing dropped
    assert recorder.rejected[("events", "dropped")] == 0
    recorder._write = write  # type: ignore[method-assign]
    await recorder.flush()
    assert await _count(db, UsageRecord) == 2
    assert await _count(db, ChatCompletionEvent) == 2


async def test_rejected_rows_are_in_the_metrics(
    app: FastAPI, anon_client: httpx.AsyncClient
) -> None:
    recorder: Recorder = app.state.services.recorder
    bad = _event("poisoned")
    bad["extra_fields"] = {"k": "\ud800"}
    recorder.record(_usage("m"), bad)
    await recorder.flush()
    text = (await anon_client.get("/metrics")).text
    assert 'maestrale_accounting_rows_rejected_total{outcome="scrubbed",table="events"} 1.0' in text
    assert 'maestrale_accounting_rows_rejected_total{outcome="dropped",table="events"} 0.0' in text
