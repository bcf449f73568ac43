"""The background writer: rows the database refuses never block the rows behind them, and
closing it in the middle of a write loses nothing."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

from sqlalchemy import func, select

from maestrale.accounting.recorder import Recorder
from maestrale.accounting.tables import UsageRecord
from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.observability.events.tables import ChatCompletionEvent


def _usage(model: str) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()), "organization_id": "o", "workspace_id": "w", "model": model,
        "endpoint": "chat", "source": "api", "prompt_tokens": 1, "completion_tokens": 1,
        "total_tokens": 2, "cost": 0.0, "latency_ms": 1.0, "status_code": 200,
        "correlation_id": "c", "created_at": utcnow(),
    }  # fmt: skip


def _event(text: str) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()), "organization_id": "o", "workspace_id": "w",
        "correlation_id": "c", "source": "api", "model": "m", "status_code": 200,
        "latency_ms": 1.0, "request_messages": [{"role": "user", "content": text}],
        "response_messages": [], "enabled_tools": [], "nb_input_tokens": 1, "nb_output_tokens": 0,
        "nb_messages": 1, "extra_fields": {"note": text}, "created_at": utcnow(),
    }  # fmt: skip


async def _count(db: Database, table: Any) -> int:
    async with db.session() as session:
        return int((await session.execute(select(func.count()).select_from(table))).scalar_one())


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
