"""What the fault scenarios share: the cluster, clients through the load balancer (a standard
key, an admin key), the steady load, the store checks, and small waiting helpers."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx

from bench.cluster.checks import Store
from bench.cluster.cluster import Cluster
from bench.cluster.load import Call, Load
from bench.cluster.report import Params

# Accounting rows are written in the background at least every 0.25 s (the default
# accounting_flush_seconds): wait this long before looking for them.
FLUSH_WAIT = 1.5


class Bench:
    def __init__(self, cluster: Cluster, params: Params, run_id: str) -> None:
        self.cluster = cluster
        self.params = params
        self.run_id = run_id
        self.client = httpx.AsyncClient(
            base_url=cluster.url,
            headers={"Authorization": f"Bearer {cluster.api_key}"},
            timeout=60,
        )
        self.admin = httpx.AsyncClient(
            base_url=cluster.url, headers={"x-api-key": cluster.admin_key}, timeout=60
        )
        self.load = Load(cluster.url, cluster.api_key, run_id, concurrency=params.concurrency)
        self.store = Store(cluster.database_url, self.client)

    async def close(self) -> None:
        await self.load.close()
        await self.client.aclose()
        await self.admin.aclose()
        await self.store.close()

    @contextlib.asynccontextmanager
    async def loaded(self) -> AsyncIterator[None]:
        """The steady load runs for the duration of the block."""
        await self.load.start()
        try:
            yield
        finally:
            await self.load.stop()

    async def in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        """A blocking cluster operation (kill, pg_ctl...) off the event loop."""
        return await asyncio.to_thread(fn, *args)

    async def cli(self, *args: str) -> str:
        """`maestrale <args>` on the cluster's database and Redis."""
        out: str = await asyncio.to_thread(self.cluster.maestrale_cli, *args)
        return out


def now() -> float:
    return time.monotonic()


async def until(
    check: Callable[[], Awaitable[bool]] | Callable[[], bool],
    timeout: float,
    every: float = 0.05,
) -> float | None:
    """When `check` first held (monotonic time), or None if it did not within `timeout`; an
    exception in `check` counts as not yet."""
    deadline = now() + timeout
    while True:
        try:
            result = check()
            if inspect.isawaitable(result):
                result = await result
            if result:
                return now()
        except Exception:
            pass
        if now() > deadline:
            return None
        await asyncio.sleep(every)


async def finished(calls: list[Call], timeout: float) -> None:
    """Wait until the calls under way have been answered (or failed)."""
    await until(lambda: all(c.end for c in calls), timeout)
