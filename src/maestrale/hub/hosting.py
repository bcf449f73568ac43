"""What the supervisor's hub serves: the hosted engines, the limit counters when there is no
Redis to hold them, and every server process's metrics for the one that is scraped."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from maestrale.config import Settings
from maestrale.engines.specs import load_catalog
from maestrale.hub.counters import counter_handlers
from maestrale.hub.engines import Description, EngineHost
from maestrale.hub.server import CallHandler, Hub
from maestrale.limits.memory import MemoryCounters


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
