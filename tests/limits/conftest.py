"""Limits fixtures: both counter backends (Redis when MAESTRALE_TEST_REDIS_URL is set)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from maestrale.limits.counters import CounterBackend
from maestrale.limits.memory import MemoryCounters

REDIS_ENV = "MAESTRALE_TEST_REDIS_URL"


def redis_url() -> str | None:
    return os.environ.get(REDIS_ENV)


def needs_redis() -> Any:
    return pytest.mark.skipif(not redis_url(), reason=f"{REDIS_ENV} is not set")


@pytest.fixture
async def redis_client() -> AsyncIterator[Any]:
    url = redis_url()
    if not url:
        pytest.skip(f"{REDIS_ENV} is not set")
    from redis.asyncio import Redis

    client = Redis.from_url(url)
    yield client
    await client.aclose()


@pytest.fixture(params=["memory", "redis", "hub"])
async def counters(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[CounterBackend]:
    if request.param == "memory":
        yield MemoryCounters(reservation_ttl=0.3)
        return
    if request.param == "hub":  # the processes of `serve --workers`: the hub's memory counters
        from maestrale.hub.counters import HubCounters, counter_handlers
        from tests.hub.hubs import running_hub

        handlers = counter_handlers(MemoryCounters(reservation_ttl=0.3))
        async with running_hub(tmp_path_factory.mktemp("hub"), handlers) as (_, hub):
            yield HubCounters(hub)
        return
    url = redis_url()
    if not url:
        pytest.skip(f"{REDIS_ENV} is not set")
    from redis.asyncio import Redis

    from maestrale.limits.redis_counters import RedisCounters

    client = Redis.from_url(url)
    yield RedisCounters(client, reservation_ttl=0.3)
    await client.aclose()


@pytest.fixture
def prefix() -> str:
    """Keys unique to the test, so tests never share Redis state."""
    return f"test:{uuid.uuid4().hex}"
