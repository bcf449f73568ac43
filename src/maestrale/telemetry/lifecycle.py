"""The telemetry store of a serving process: its ingestion queue and writer task, its metrics, and
the periodic purge of records older than the retention (in bounded batches, each a short
transaction of its own, so that a purge never holds the database for long)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from maestrale.config.telemetry import TelemetrySettings
from maestrale.core.db import Database
from maestrale.core.metrics import Metrics
from maestrale.telemetry.ingest import limits_of
from maestrale.telemetry.queue import IngestQueue
from maestrale.telemetry.repository import purge

if TYPE_CHECKING:
    from maestrale.tracing.provider import Tracing

log = logging.getLogger("maestrale.telemetry")

SHUTDOWN_SECONDS = 10.0
PURGE_ROWS = 5_000  # rows of each table per purge transaction
DAY_NS = 24 * 3600 * 1_000_000_000


@asynccontextmanager
async def telemetry_store(
    db: Database,
    settings: TelemetrySettings,
    metrics: Metrics | None = None,
    tracing: Tracing | None = None,
) -> AsyncIterator[IngestQueue]:
    """The running store: its queue, written by a task of its own until the block exits (then
    what is queued is written), and the purge task; with `tracing` (the server traces itself)
    and `telemetry_self_traces`, the server's spans of workspace requests go to the queue."""
    queue = IngestQueue(db, settings.telemetry_queue_records)
    if metrics is not None:
        _expose(metrics, queue)
    own_spans = None
    if tracing is not None and settings.telemetry_self_traces:
        from maestrale.telemetry.selftrace import StoreSpans

        own_spans = StoreSpans(queue, limits_of(settings))
        tracing.provider.add_span_processor(own_spans)
    writer = asyncio.create_task(queue.run(), name="telemetry-writer")
    purger = asyncio.create_task(purge_loop(db, settings), name="telemetry-purge")
    try:
        yield queue
    finally:
        if own_spans is not None:
            own_spans.shutdown()
        # The writer finishes what is queued (a batch cut short would be rolled back), within
        # a bound: what is left then is written by `close`.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(queue.drain(), SHUTDOWN_SECONDS)
        for task in (purger, writer):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(Exception):
            await queue.close()


def _expose(metrics: Metrics, queue: IngestQueue) -> None:
    metrics.add_counter(
        "maestrale_telemetry_rejected_batches",
        "OTLP export requests refused with 429 because the ingestion queue was full",
        (),
        lambda: queue.rejected_batches,
    )
    metrics.add_counter(
        "maestrale_telemetry_accepted_records",
        "spans and log records accepted by the OTLP receiver",
        ("kind",),
        lambda: queue.accepted,
    )
    metrics.add_counter(
        "maestrale_telemetry_dropped_records",
        "spans and log records accepted but not written (the database refused them)",
        ("kind",),
        lambda: queue.dropped,
    )
    metrics.add_counter(
        "maestrale_telemetry_metric_points",
        "OTLP metric data points received (counted, not stored)",
        (),
        lambda: {(): queue.metric_points},
    )


async def purge_loop(db: Database, settings: TelemetrySettings) -> None:
    while True:
        await asyncio.sleep(settings.telemetry_purge_seconds)
        try:
            await purge_old(db, settings.telemetry_retention_days)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("telemetry: the purge of old records failed; retried later")


async def purge_old(db: Database, retention_days: float, *, now_ns: int | None = None) -> int:
    """Delete what ended before the retention, PURGE_ROWS of each table per transaction."""
    before = (now_ns or time.time_ns()) - int(retention_days * DAY_NS)
    total = 0
    while True:
        async with db.transaction() as work:
            deleted = await purge(work.session, before, PURGE_ROWS)
        total += deleted
        if deleted == 0:
            return total
