"""Wiring of the limits for a process: the Redis client (when configured), the counters, the
provider of each organization's limits and the gateway hook."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from maestrale.config import Settings
from maestrale.core.db import Database
from maestrale.limits.counters import CounterBackend
from maestrale.limits.hook import LimitsHook
from maestrale.limits.memory import MemoryCounters
from maestrale.limits.policy import LimitsProvider


def redis_client(url: str | None, timeout: float = 1.0) -> Any:
    """The process's Redis client (counters and invalidations), or None without Redis.

    Every connect and command gives up after `timeout` seconds, retried once (a pooled
    connection Redis closed when it restarted): an unreachable Redis costs a call at most about
    twice `timeout`, then the limits fail closed or open (`limits_fail_open`). The client's own
    default would retry ten times, each waiting for its 5 s socket timeout."""
    if not url:
        return None
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import ConstantBackoff

    return Redis.from_url(
        url,
        health_check_interval=30,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(ConstantBackoff(0.05), 1),
    )


@dataclass(frozen=True, slots=True)
class Limits:
    provider: LimitsProvider
    counters: CounterBackend
    hook: LimitsHook


def build_limits(
    settings: Settings,
    db: Database,
    redis: Any | None,
    hub_counters: CounterBackend | None = None,
) -> Limits:
    """In-process counters on one node; Redis counters (one shared budget) when configured; the
    hub's in-process counters (`hub_counters`, which the composition root builds for the
    processes of one `serve --workers`) without Redis.

    Any process whose gateway calls models (API replicas, standalone batch workers) should
    register `hook` so that every call counts against the same limits.
    """
    provider = LimitsProvider(db, settings.limits, settings.limits_cache_ttl)
    counters: CounterBackend
    if redis is None and hub_counters is not None:
        counters = hub_counters
    elif redis is None:
        counters = MemoryCounters(reservation_ttl=settings.limits_reservation_ttl)
    else:
        from maestrale.limits.redis_counters import RedisCounters

        counters = RedisCounters(redis, reservation_ttl=settings.limits_reservation_ttl)
    hook = LimitsHook(provider, counters, db, fail_open=settings.limits_fail_open)
    return Limits(provider, counters, hook)
