"""Liveness (`/health`), readiness (`/ready`) and the draining state of a process at shutdown.

- `/health` says whether the process can serve, and nothing about what it depends on: a
  database outage must not get every replica restarted by its orchestrator. 200 while it
  serves; 503 `draining` once it was told to stop (SIGTERM), so that a load balancer sends it
  nothing new while it finishes what it holds.
- `/ready` says whether it can serve *well*: the database answers, Redis answers (when
  configured), the blob store is reachable (a writable directory, or the S3 bucket). Each
  check is bounded by `ready_check_timeout`; a check that fails or takes longer says
  `unreachable` and the answer is 503 `not_ready`; at shutdown, 503 `draining`.

Neither needs a key; neither ever answers a 500.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text

from maestrale import __version__

if TYPE_CHECKING:
    from maestrale.config import Settings
    from maestrale.core.blobs import BlobStore
    from maestrale.core.db import Database

log = logging.getLogger("maestrale.readiness")

OK, UNREACHABLE, NOT_CONFIGURED = "ok", "unreachable", "not_configured"


class Lifecycle:
    """Whether the process was told to stop. The server sets `draining` from its signal handler
    (a plain attribute: safe there) and calls `begin_draining()` from the event loop, which runs
    the callbacks registered with `on_drain` once (the in-process worker stops claiming jobs)."""

    def __init__(self) -> None:
        self.draining = False
        self._callbacks: list[Callable[[], object]] = []
        self._notified = False

    def on_drain(self, callback: Callable[[], object]) -> None:
        self._callbacks.append(callback)
        if self._notified:
            callback()

    def begin_draining(self) -> None:
        self.draining = True
        if self._notified:
            return
        self._notified = True
        for callback in self._callbacks:
            try:
                callback()
            except Exception:
                log.exception("a shutdown callback failed")


class Checked(Protocol):
    """What `/ready` checks: the process's database, Redis client (None: not configured) and
    blob store."""

    @property
    def db(self) -> Database: ...

    @property
    def redis(self) -> Any | None: ...

    @property
    def blobs(self) -> BlobStore: ...


class Readiness:
    """The checks of `/ready`. Concurrent probes share one run of the checks, so a burst of
    them (or a slow dependency) never piles up connections or threads."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.timeout = settings.ready_check_timeout
        self._running: asyncio.Task[dict[str, str]] | None = None
        self._s3_probe: Any = None

    async def checks(self, services: Checked) -> dict[str, str]:
        if self._running is None or self._running.done():
            self._running = asyncio.create_task(self._check(services), name="readiness")
        return await asyncio.shield(self._running)

    async def _check(self, services: Checked) -> dict[str, str]:
        database, redis, blobs = await asyncio.gather(
            self._bounded("database", self._database(services)),
            self._bounded("redis", self._redis(services)),
            self._bounded("blobs", self._blobs(services)),
        )
        return {"database": database, "redis": redis, "blobs": blobs}

    async def _bounded(self, name: str, check: Any) -> str:
        try:
            async with asyncio.timeout(self.timeout):
                result: str = await check
                return result
        except Exception as exc:
            log.warning("readiness: %s unreachable: %s: %s", name, type(exc).__name__, exc)
            return UNREACHABLE

    async def _database(self, services: Checked) -> str:
        async with services.db.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        return OK

    async def _redis(self, services: Checked) -> str:
        if services.redis is None:
            return NOT_CONFIGURED
        await services.redis.ping()
        return OK

    async def _blobs(self, services: Checked) -> str:
        store = services.blobs
        root = getattr(store, "root", None)
        if isinstance(root, Path):
            writable = await asyncio.to_thread(_writable_dir, root)
            return OK if writable else UNREACHABLE
        bucket = getattr(store, "bucket", None)
        if isinstance(bucket, str):
            probe = self._s3_probe or self._make_s3_probe()
            await asyncio.to_thread(probe.head_bucket, Bucket=bucket)
            return OK
        return OK  # another store: nothing known to check

    def _make_s3_probe(self) -> Any:
        """A client of the bucket's endpoint whose calls give up within the check's timeout
        (the store's own retries and waits for as long as an upload needs)."""
        import boto3
        from botocore.config import Config

        settings = self.settings
        config = Config(
            connect_timeout=self.timeout, read_timeout=self.timeout, retries={"max_attempts": 1}
        )
        self._s3_probe = boto3.client(
            "s3",
            endpoint_url=settings.s3_endpoint_url,
            region_name=settings.s3_region,
            config=config,
        )
        return self._s3_probe


def _writable_dir(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def install_probes(app: FastAPI, settings: Settings) -> Lifecycle:
    """Add `/health` and `/ready` to `app`; the process's `Lifecycle` (`app.state.lifecycle`)."""
    lifecycle = Lifecycle()
    readiness = Readiness(settings)
    app.state.lifecycle = lifecycle
    alive = {"status": "ok", "version": __version__}

    @app.get("/health", tags=["service"], responses={503: {"description": "Draining"}})
    async def health() -> JSONResponse:
        """Liveness: 200 while the process serves, whatever the state of the database or Redis
        (see `/ready`); 503 `draining` once it was told to stop. No key needed."""
        if lifecycle.draining:
            return JSONResponse({"status": "draining"}, 503)
        return JSONResponse(alive)

    @app.get("/ready", tags=["service"], responses={503: {"description": "Not ready, or draining"}})
    async def ready(request: Request) -> JSONResponse:
        """Readiness: 200 `ready` when the database, Redis (if configured) and the blob store
        answer; 503 `not_ready` naming the `unreachable` ones, or `draining` once the process
        was told to stop. Each check is bounded by `ready_check_timeout`. No key needed."""
        if lifecycle.draining:
            return JSONResponse({"status": "draining", "checks": {}}, 503)
        services = getattr(request.app.state, "services", None)
        if services is None:  # still starting
            return JSONResponse({"status": "not_ready", "checks": {}}, 503)
        checks = await readiness.checks(services)
        if lifecycle.draining:
            return JSONResponse({"status": "draining", "checks": checks}, 503)
        if all(state != UNREACHABLE for state in checks.values()):
            return JSONResponse({"status": "ready", "checks": checks})
        return JSONResponse({"status": "not_ready", "checks": checks}, 503)

    return lifecycle
