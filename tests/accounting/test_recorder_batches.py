"""How the recorder writes: a flush in bounded batches (so no batch holds a thread or the
event loop for long), and rows stored exactly as SQLAlchemy's insert would store them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from maestrale.accounting.bulk import BATCH_ROWS
from maestrale.accounting.recorder import Recorder
from maestrale.accounting.tables import ChatCompletionEvent, UsageRecord
from maestrale.core.db import Database
from maestrale.observability.events.tables import ChatCompletionEventText
from tests.accounting.test_recorder import _count, _event, _usage

pytestmark = pytest.mark.both_databases()


async def test_a_big_flush_is_written_in_bounded_batches(db: Database) -> None:
    recorder = Recorder(db)
    batches: list[tuple[int, int]] = []
    write = recorder._write

    async def counted(usage: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        batches.append((len(usage), len(events)))
        await write(usage, events)

    recorder._write = counted  # type: ignore[method-assign]
    rows = 2 * BATCH_ROWS + 7
    for i in range(rows):
        recorder.record(_usage(f"m{i}"), _event(f"text {i}"))
    await recorder.flush()
    assert len(batches) == 3
    assert all(u <= BATCH_ROWS and e <= BATCH_ROWS for u, e in batches)
    assert await _count(db, UsageRecord) == rows
    assert await _count(db, ChatCompletionEvent) == rows
    assert await _count(db, ChatCompletionEventText) == rows  # the triggers ran for each
    await recorder.close()


async def test_rows_are_stored_as_sqlalchemy_would_store_them(db: Database) -> None:
    """Defaults filled in for missing keys, datetimes to the microsecond, JSON as JSON."""
    recorder = Recorder(db)
    moment = datetime(2026, 3, 4, 5, 6, 7, 0, tzinfo=UTC)  # microsecond 0 is kept too
    usage = {
        "organization_id": "o",
        "workspace_id": "w",
        "model": "m",
        "endpoint": "chat",
        "cost": 1e-7,
        "created_at": moment,
    }
    event = _event("héllo \U0001f600")
    event["created_at"] = datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
    event["extra_fields"] = {"n": 2**62, "f": 0.5, "nested": {"list": [1, None, True]}}
    event["request_messages"] = [{"role": "user", "content": [{"type": "text", "text": "a"}]}]
    recorder.record(usage, event)
    await recorder.close()
    async with db.transaction() as work:
        stored = (await work.session.execute(select(UsageRecord))).scalar_one()
        ev = (await work.session.execute(select(ChatCompletionEvent))).scalar_one()
        text = (await work.session.execute(select(ChatCompletionEventText))).scalar_one()
    uuid.UUID(stored.id)  # the column default made it
    assert (stored.source, stored.status_code, stored.key_id, stored.pages) == ("api", 200, None, 0)
    assert (stored.prompt_tokens, stored.audio_seconds, stored.cost) == (0, 0.0, 1e-7)
    assert stored.created_at == moment
    assert ev.created_at == event["created_at"]
    assert ev.extra_fields == event["extra_fields"]
    assert ev.request_messages == event["request_messages"]
    assert ev.response_messages == []
    assert text.request_text == "a"


async def test_a_failure_mid_flush_keeps_the_rest_in_order(db: Database) -> None:
    """The batches written stay written; the rest is put back, in order, for the next tick."""
    recorder = Recorder(db)
    write, calls = recorder._write, 0

    async def second_fails(usage: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OperationalError("INSERT", {}, ConnectionRefusedError("database down"))
        await write(usage, events)

    recorder._write = second_fails  # type: ignore[method-assign]
    rows = 2 * BATCH_ROWS + 3
    for i in range(rows):
        recorder.record(_usage(str(i)))
    with pytest.raises(OperationalError):
        await recorder.flush()
    left = [row["model"] for row in recorder._usage]
    assert left == [str(i) for i in range(BATCH_ROWS, rows)]
    assert await _count(db, UsageRecord) == BATCH_ROWS
    await recorder.flush()
    assert await _count(db, UsageRecord) == rows
    await recorder.close()
