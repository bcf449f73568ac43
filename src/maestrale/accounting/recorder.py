"""The background writer of usage records and chat completion events.

The request path only appends a row to an in-memory buffer (no I/O, no await); a background task
writes the buffer in one transaction every `interval` seconds (0.25 s by default, so a call is
durable within a second), and `close()` writes what is left at shutdown. A failed write is
retried on the next tick, the buffer bounded so that a long database outage cannot exhaust
memory (the oldest rows are dropped then, and counted in the log). A row the database refuses
(NUL characters, which Postgres cannot store) must not block every row behind it: such a batch is
written again with its text scrubbed, and a row still refused is dropped and logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from sqlalchemy import insert
from sqlalchemy.exc import DBAPIError

from maestrale.accounting.tables import UsageRecord
from maestrale.core.db import Database, is_data_error
from maestrale.observability.events.tables import ChatCompletionEvent

log = logging.getLogger("maestrale.accounting")

MAX_BUFFERED = 200_000


class Recorder:
    def __init__(self, db: Database, *, interval: float = 0.25) -> None:
        self.db = db
        self.interval = interval
        self._usage: list[dict[str, Any]] = []
        self._events: list[dict[str, Any]] = []
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def record(self, usage: dict[str, Any], event: dict[str, Any] | None = None) -> None:
        """Buffer one call's usage row (and its event); never blocks, never raises."""
        self._usage.append(usage)
        if event is not None:
            self._events.append(event)
        if len(self._usage) + len(self._events) > MAX_BUFFERED:
            drop = len(self._usage) // 10 or 1
            del self._usage[:drop]
            del self._events[:drop]
            log.error("accounting buffer full: dropped the %d oldest rows", drop)

    @property
    def pending(self) -> int:
        return len(self._usage) + len(self._events)

    async def flush(self) -> None:
        async with self._lock:
            usage, events = self._usage, self._events
            if not usage and not events:
                return
            self._usage, self._events = [], []
            try:
                try:
                    await self._write(usage, events)
                except DBAPIError as exc:
                    if not is_data_error(exc):
                        raise
                    await self._salvage(_scrub(usage), _scrub(events))
            except Exception:
                # Put them back in front: written on the next tick, in order.
                self._usage[:0] = usage
                self._events[:0] = events
                raise

    async def _write(self, usage: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        async with self.db.session() as session:
            if usage:
                await session.execute(insert(UsageRecord), usage)
            if events:
                await session.execute(insert(ChatCompletionEvent), events)

    async def _salvage(self, usage: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        try:
            await self._write(usage, events)
            return
        except DBAPIError as exc:
            if not is_data_error(exc):
                raise
        dropped = 0
        for row in usage:
            dropped += not await self._write_one([row], [])
        for row in events:
            dropped += not await self._write_one([], [row])
        log.error("dropped %d accounting rows the database refused", dropped)

    async def _write_one(self, usage: list[dict[str, Any]], events: list[dict[str, Any]]) -> bool:
        try:
            await self._write(usage, events)
        except DBAPIError as exc:
            if not is_data_error(exc):
                raise
            return False
        return True

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                # Shielded: `close()` cancels this task, and a write cut short would lose its
                # rows (they are out of the buffer) and could leave its connection in a
                # transaction (on SQLite, holding the write lock the last flush then waits on).
                await asyncio.shield(self.flush())
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("could not write %d accounting rows; retrying", self.pending)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="accounting")

    async def close(self) -> None:
        """Stop the background task and write what is left (after a write under way)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.flush()  # takes the lock: a shielded write under way finishes first


def _scrub(value: Any) -> Any:
    """The value with NUL characters replaced in every string (Postgres stores no NUL)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    if isinstance(value, dict):
        return {key: _scrub(item) for key, item in value.items()}
    return value
