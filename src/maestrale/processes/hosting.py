"""What the supervisor's hub serves: the hosted engines, the limit counters when there is no
Redis to hold them, and every server process's metrics for the one that is scraped."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from maestrale.catalog.config import load_catalog
from maestrale.config import Settings
from maestrale.limits.memory import MemoryCounters
from maestrale.processes.counters import counter_handlers
from maestrale.processes.engines import Description, EngineHost
from maestrale.processes.hub import CallHandler, Hub


@asynccontextmanager
async def open_hub(settings: Settings, path: Path) -> AsyncIterator[Hub]:
    engines = EngineHost(load_catalog(settings.models))
    described = engines.describe()

    async def describe() -> dict[str, Description]:
        return described

    calls: dict[str, CallHandler] = {"engines.describe": describe, "engine.call": engines.call}
    if not settings.redis_url:
        counters = MemoryCounters(reservation_ttl=settings.limits_reservation_ttl)
        calls.update(counter_handlers(counters))
    hub = Hub(calls, {"engine.stream": engines.stream})

    async def metrics() -> list[bytes]:
        answers: list[bytes] = await hub.gather("metrics.collect")
        return answers

    hub.calls["metrics.gather"] = metrics
    await hub.start(path)
    try:
        yield hub
    finally:
        await hub.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        await engines.aclose()
