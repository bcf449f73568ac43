"""create_app(): routers, middleware, error handlers, and the lifespan that opens the process's
services (`maestrale.services`) and runs its background tasks (key usage, invalidations, the
in-process worker)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi import FastAPI, Request
from fastapi.responses import Response

from maestrale import __version__, planned
from maestrale.api import API_ROUTES
from maestrale.config import Settings, make_data_dir
from maestrale.console import install_console
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import admin_principal
from maestrale.core.auth.repository import KeyRepository
from maestrale.core.errors import install_error_handlers
from maestrale.core.metrics import Metrics, merge
from maestrale.core.middleware import RequestContextMiddleware
from maestrale.core.migrate import upgrade_async
from maestrale.core.readiness import install_probes
from maestrale.core.websocket import websocket_not_found
from maestrale.observability import errors as observability_errors
from maestrale.services import Services, first_start, open_services, start_embedded_temporal
from maestrale.telemetry.lifecycle import telemetry_store
from maestrale.tracing.setup import install_tracing
from maestrale.workflows import routing as workflow_routing

log = logging.getLogger("maestrale")

KEY_USAGE_FLUSH_SECONDS = 30.0
GC_THRESHOLDS = (7_000, 20, 100)


async def _flush_key_usage(services: Services, lock: asyncio.Lock) -> None:
    async with lock:  # the last flush waits for one under way
        last_used = services.key_cache.take_last_used()
        if last_used:
            async with services.db.transaction() as work:
                await KeyRepository(work.session).touch(last_used)


async def _key_usage_loop(services: Services, lock: asyncio.Lock) -> None:
    while True:
        await asyncio.sleep(KEY_USAGE_FLUSH_SECONDS)
        try:
            # Shielded from the shutdown's cancel: a write is finished, never cut short.
            await asyncio.shield(_flush_key_usage(services, lock))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("could not record key usage")


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    make_data_dir(settings.data_dir)
    if settings.auto_migrate:
        await upgrade_async(settings.resolved_database_url)
    async with open_services(settings) as services, contextlib.AsyncExitStack() as stack:
        app.state.services = services
        if services.workflows is None and settings.temporal_embedded:
            await start_embedded_temporal(stack, settings, services)
        elif services.workflows is None:  # off by the settings, or (a process of `serve
            # --workers`) because the supervisor's embedded Temporal did not start: why
            services.workflows_off = getattr(app.state, "workflows_off", None)
        if services.workflows is not None:  # workers reach Temporal only through its proxy
            from maestrale.workflows.workers.frontend import start_worker_proxy

            await start_worker_proxy(
                stack,
                services.workflows,
                db=services.db,
                key_cache=services.key_cache,
                settings=settings,
            )
        metrics: Metrics = app.state.metrics
        if services.hub is not None:  # the scraped process gathers every process's metrics
            services.hub.answer("metrics.collect", metrics.render)
        metrics.add_counter(
            "maestrale_accounting_rows_rejected",
            "usage and event rows the database refused, written scrubbed or dropped",
            ("table", "outcome"),
            lambda: services.recorder.rejected,
        )
        services.telemetry = await stack.enter_async_context(
            telemetry_store(services.db, settings, metrics, getattr(app.state, "tracing", None))
        )
        background = await _serve(services)
        # Told to stop (SIGTERM): the in-process worker stops claiming jobs at once, while the
        # server finishes its requests.
        app.state.lifecycle.on_drain(background.stop.set)
        try:
            yield
        finally:
            await _stop(services, background)


@dataclass(slots=True)
class _Background:
    """The background tasks of a serving process, and what stops them."""

    stop: asyncio.Event = field(default_factory=asyncio.Event)
    key_usage_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


async def _serve(services: Services) -> _Background:
    """First-start bootstrap, then the background tasks of a serving process."""
    settings = services.settings
    await first_start(services.db, settings)
    background = _Background()
    background.tasks.append(
        asyncio.create_task(_key_usage_loop(services, background.key_usage_lock), name="key-usage")
    )
    if services.invalidator.bus is not None:
        subscribed = asyncio.Event()
        background.tasks.append(
            asyncio.create_task(services.invalidator.listen(subscribed), name="invalidation")
        )
        try:
            await asyncio.wait_for(subscribed.wait(), timeout=5.0)
        except TimeoutError:
            log.warning("not subscribed to cache invalidations yet (Redis unreachable?)")
    if settings.worker:
        from maestrale.core.jobs.runner import run_worker

        background.tasks.append(
            asyncio.create_task(
                run_worker(
                    services.db,
                    services.job_registry,
                    concurrency=settings.worker_concurrency,
                    lease_seconds=settings.job_lease_seconds,
                    poll_seconds=settings.job_poll_seconds,
                    stop=background.stop,
                    grace_seconds=settings.worker_grace_seconds,
                    per_workspace=settings.jobs_per_workspace,
                    wakeup=services.job_wakeup,
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
        # heap is what stalls requests (docs/architecture.md §8).
        gc.set_threshold(*GC_THRESHOLDS)
    return background


async def _stop(services: Services, background: _Background) -> None:
    background.stop.set()
    for task in background.tasks:
        if task.get_name() != "worker":
            task.cancel()
    for task in background.tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    with contextlib.suppress(Exception):
        await _flush_key_usage(services, background.key_usage_lock)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(
        title="Maestrale",
        version=__version__,
        description="Open, self-hosted AI platform server, wire-compatible with the official SDKs.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.metrics = Metrics()
    renderers = {
        # The planned groups' longer prefixes first: the first matching prefix renders.
        **{prefix: planned.renderer(group) for prefix, group in planned.PLANNED.items()},
        observability_errors.PREFIX: observability_errors.render,
        workflow_routing.PREFIX: workflow_routing.render,
    }
    install_error_handlers(app, scoped=renderers)
    app.router.routes.extend(API_ROUTES)
    install_console(app)
    app.router.default = websocket_not_found(app.router.default)

    install_probes(app, settings)  # /health (liveness, draining) and /ready (readiness)

    if settings.metrics_access != "off":

        @app.get("/metrics", tags=["service"], include_in_schema=False)
        async def metrics(request: Request) -> Response:
            """Prometheus metrics: request counts and latency histograms by route and status,
            accounting rows rejected; of every process of a `serve --workers`. Keyless unless
            `metrics_access` is `admin`."""
            if settings.metrics_access == "admin":
                await admin_principal(request)
            registry: Metrics = request.app.state.metrics
            services: Services = app_services(request)
            hub = services.hub
            body = merge(await hub.call("metrics.gather")) if hub else registry.render()
            return Response(body, media_type=registry.content_type)

    app.add_middleware(
        RequestContextMiddleware,
        metrics=app.state.metrics,
        max_request_bytes=settings.max_request_bytes,
        body_limits=settings.body_limits,
        renderers=renderers,
    )
    install_tracing(app, settings)  # outermost: the request's span covers all of it
    return app
