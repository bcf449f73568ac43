"""create_app(): routers, middleware, error handlers, and the lifespan that owns the database,
the engines, the key cache and the in-process worker."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from sqlalchemy import text

from maestrale import __version__
from maestrale.accounting.recorder import Recorder
from maestrale.api import api_router
from maestrale.catalog.config import load_catalog
from maestrale.completions.gateway import Gateway
from maestrale.config import Settings, make_data_dir
from maestrale.conversations.histories import Histories
from maestrale.core.auth.bootstrap import bootstrap
from maestrale.core.auth.cache import KeyCache
from maestrale.core.auth.invalidation import Invalidator
from maestrale.core.auth.repository import KeyRepository
from maestrale.core.db import Database
from maestrale.core.errors import install_error_handlers
from maestrale.core.metrics import Metrics
from maestrale.core.middleware import RequestContextMiddleware
from maestrale.core.migrate import upgrade_async
from maestrale.core.signing import load_or_create_secret
from maestrale.engines.registry import EngineRegistry
from maestrale.jobs import build_registry
from maestrale.limits.setup import build_limits, redis_client
from maestrale.observability import errors as observability_errors
from maestrale.services import Services, make_blob_store

log = logging.getLogger("maestrale")

KEY_USAGE_FLUSH_SECONDS = 30.0
GC_THRESHOLDS = (7_000, 20, 100)


async def _flush_key_usage(app: FastAPI) -> None:
    cache: KeyCache = app.state.key_cache
    async with app.state.key_usage_lock:  # the last flush waits for one under way
        last_used = cache.take_last_used()
        if last_used:
            async with app.state.db.session() as session:
                await KeyRepository(session).touch(last_used)


async def _key_usage_loop(app: FastAPI) -> None:
    while True:
        await asyncio.sleep(KEY_USAGE_FLUSH_SECONDS)
        try:
            # Shielded from the shutdown's cancel: a write is finished, never cut short.
            await asyncio.shield(_flush_key_usage(app))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("could not record key usage")


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    make_data_dir(settings.data_dir)
    url = settings.resolved_database_url
    if settings.auto_migrate:
        await upgrade_async(url)
    db = Database(url, pool_size=settings.database_pool_size)
    app.state.db = db
    app.state.engines = EngineRegistry(load_catalog(settings.models))
    app.state.recorder = Recorder(db, interval=settings.accounting_flush_seconds)
    app.state.recorder.start()
    redis = redis_client(settings.redis_url)
    app.state.redis = redis
    invalidator = Invalidator(app.state.key_cache, redis)
    app.state.invalidator = invalidator
    limits = build_limits(settings, db, redis)
    invalidator.subscribe_local(limits.provider.on_invalidation)
    app.state.limits = limits
    app.state.gateway = Gateway(app.state.engines, app.state.recorder, db, hooks=[limits.hook])
    app.state.blobs = make_blob_store(settings)
    app.state.secret_key = load_or_create_secret(settings.data_dir, _secret(settings.secret_key))
    app.state.job_registry = build_registry(
        Services(settings, db, app.state.blobs, app.state.gateway)
    )
    async with db.session() as session:
        created = await bootstrap(
            session,
            api_key=_secret(settings.bootstrap_api_key),
            admin_key=_secret(settings.bootstrap_admin_key),
            keys_file=settings.data_dir / "bootstrap-keys",
        )
    if created is not None:
        log.info("created the default organization and workspace %s", created.workspace_id)

    stop = asyncio.Event()
    app.state.key_usage_lock = asyncio.Lock()
    tasks = [asyncio.create_task(_key_usage_loop(app), name="key-usage")]
    if redis is not None:
        subscribed = asyncio.Event()
        tasks.append(asyncio.create_task(invalidator.listen(subscribed), name="invalidation"))
        try:
            await asyncio.wait_for(subscribed.wait(), timeout=5.0)
        except TimeoutError:
            log.warning("not subscribed to cache invalidations yet (Redis unreachable?)")
    if settings.worker:
        from maestrale.core.jobs.runner import run_worker

        tasks.append(
            asyncio.create_task(
                run_worker(
                    db,
                    app.state.job_registry,
                    concurrency=settings.worker_concurrency,
                    lease_seconds=settings.job_lease_seconds,
                    poll_seconds=settings.job_poll_seconds,
                    stop=stop,
                    grace_seconds=settings.worker_grace_seconds,
                ),
                name="worker",
            )
        )
    # Objects that live as long as the process never need scanning by the cyclic collector:
    # freezing them keeps full collections short on the request path.
    if settings.gc_freeze:
        gc.collect()
        gc.freeze()
        # Fewer young collections and rare full ones: a full collection of a busy server's
        # heap is what stalls requests (DESIGN §8).
        gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        stop.set()
        for task in tasks:
            if task.get_name() != "worker":
                task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(Exception):
            await _flush_key_usage(app)
        await app.state.recorder.close()
        await app.state.engines.aclose()
        if redis is not None:
            with contextlib.suppress(Exception):
                await redis.aclose()
        await db.dispose()


def _secret(value: object) -> str | None:
    getter = getattr(value, "get_secret_value", None)
    return getter() if getter else None


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(
        title="Maestrale",
        version=__version__,
        description="Open, self-hosted AI platform server, wire-compatible with the official SDKs.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.key_cache = KeyCache(settings.auth_cache_ttl)
    app.state.metrics = Metrics()
    app.state.histories = Histories()
    install_error_handlers(app, scoped={observability_errors.PREFIX: observability_errors.render})
    app.include_router(api_router)

    @app.get("/health", tags=["service"])
    async def health(request: Request) -> JSONResponse:
        """Liveness and database reachability; no key needed."""
        try:
            async with request.app.state.db.sessionmaker() as session:
                await session.execute(text("SELECT 1"))
        except Exception:
            log.exception("health check: database unreachable")
            return JSONResponse({"status": "unavailable", "database": "unreachable"}, 503)
        return JSONResponse({"status": "ok", "version": __version__})

    @app.get("/metrics", tags=["service"], include_in_schema=False)
    async def metrics(request: Request) -> Response:
        """Prometheus metrics: request counts and latency histograms by route and status."""
        registry: Metrics = request.app.state.metrics
        return Response(registry.render(), media_type=registry.content_type)

    app.add_middleware(
        RequestContextMiddleware,
        metrics=app.state.metrics,
        max_request_bytes=settings.max_request_bytes,
    )
    return app
