"""A hub on a Unix socket of the test's, and a client connected to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from maestrale.hub.client import HubClient
from maestrale.hub.server import CallHandler, Hub, StreamHandler


@asynccontextmanager
async def running_hub(
    folder: Path,
    calls: Mapping[str, CallHandler],
    streams: Mapping[str, StreamHandler] | None = None,
) -> AsyncIterator[tuple[Hub, HubClient]]:
    hub = Hub(calls, streams or {})
    path = folder / "hub.sock"
    await hub.start(path)
    client = await HubClient.connect(path)
    try:
        yield hub, client
    finally:
        await client.aclose()
        await hub.close()
