"""The long-lived objects of a process, built in one place: the database, the engines, the
accounting recorder, Redis, the caches and their invalidation, the limits, the gateway, blob
storage, the server secret and the job registry. `serve` opens them in its lifespan and
`maestrale worker` opens the same. Nothing below this root names `Services`: request handlers
read one attribute each through the typed dependencies of the layer that owns it
(`core.dependencies`, `engines.dependencies`, a domain's `dependencies`), and jobs, executors and
tools are given the few objects they read, or a Protocol of their own that `Services` meets."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maestrale.accounting.recorder import Recorder
from maestrale.completions.platform_calls import CompletionCalls
from maestrale.config import Settings, previous_secrets, secret_value
from maestrale.conversations.histories import Histories
from maestrale.conversations.server_tools import ToolboxFactory
from maestrale.core.auth.bootstrap import bootstrap
from maestrale.core.auth.cache import KeyCache
from maestrale.core.auth.invalidation import Bus, Invalidator, RedisBus
from maestrale.core.blobs import BlobStore, LocalBlobStore
from maestrale.core.crypto import SecretBox
from maestrale.core.db import Database
from maestrale.core.jobs.worker import JobRegistry, Wakeup
from maestrale.core.signing import load_or_create_secret
from maestrale.engines.registry import EngineFactory, EngineRegistry
from maestrale.engines.specs import load_catalog
from maestrale.fine_tuning.artifacts import ArtifactFiles
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.platform_calls import PlatformCalls
from maestrale.hub.client import HubClient
from maestrale.hub.counters import HubCounters
from maestrale.limits.setup import Limits, build_limits, redis_client
from maestrale.telemetry.queue import IngestQueue
from maestrale.tracing.setup import trace_process
from maestrale.workflows.temporal.engine import TemporalEngine, TemporalTarget

if TYPE_CHECKING:
    from maestrale.connectors.network import ConnectorRuntime

log = logging.getLogger("maestrale.services")
bootstrap_log = logging.getLogger("maestrale.bootstrap")


@dataclass(slots=True)
class Services:
    settings: Settings
    db: Database
    engines: EngineRegistry
    recorder: Recorder
    redis: Any | None
    key_cache: KeyCache
    invalidator: Invalidator
    limits: Limits
    gateway: Gateway
    # The platform's own model calls (judges, similar events), on the completions domain.
    platform_calls: PlatformCalls
    blobs: BlobStore
    secret_key: bytes
    histories: Histories
    # Seals the secrets kept at rest (connector credentials) under keys derived from secret_key.
    secrets: SecretBox
    hub: HubClient | None = None
    job_registry: JobRegistry = field(default_factory=JobRegistry)
    # Rung by requests that queued a job (once committed): the in-process worker claims at once.
    job_wakeup: Wakeup = field(default_factory=Wakeup)
    # The Temporal client of the workflows API; None when workflows are off, and then why
    # (their routes' 503; None: disabled by the settings).
    workflows: TemporalEngine | None = None
    workflows_off: str | None = None
    # Builds the server-run tools (connectors) of a conversation's or agent's tool list.
    toolboxes: ToolboxFactory | None = None
    # Reaches connectors' MCP servers (pooled sessions) and refreshes their OAuth2 tokens.
    connectors: ConnectorRuntime | None = None
    # Local copies of fine-tuned models' weights kept in the blob store.
    artifacts: ArtifactFiles | None = None
    # The telemetry store's ingestion queue (OTLP receiver); None outside a serving process.
    telemetry: IngestQueue | None = None


def make_blob_store(settings: Settings) -> BlobStore:
    """The configured blob backend: a local directory, or an S3-compatible bucket."""
    if settings.blob_backend == "s3":
        if not settings.s3_bucket:
            raise ValueError("MAESTRALE_S3_BUCKET is required with MAESTRALE_BLOB_BACKEND=s3")
        from maestrale.core.blobs_s3 import S3BlobStore

        return S3BlobStore(
            settings.s3_bucket,
            endpoint_url=settings.s3_endpoint_url,
            region=settings.s3_region,
            prefix=settings.s3_prefix,
        )
    return LocalBlobStore(settings.resolved_blob_dir)


@asynccontextmanager
async def open_services(settings: Settings) -> AsyncIterator[Services]:
    """Build every long-lived object of a process (a batch line counts against the same limits
    as a live call, whichever process runs it); on exit, flush the accounting and close them."""
    from maestrale.jobs import build_registry

    hub = await connect_hub(settings.hub_socket) if settings.hub_socket else None
    db = Database(
        settings.resolved_database_url,
        pool_size=settings.database_pool_size,
        strict=settings.strict_connections,
        connect_timeout=settings.database_connect_timeout,
        pool_timeout=settings.database_pool_timeout,
        statement_timeout=settings.database_statement_timeout,
    )
    untrace = trace_process(settings, db.engine)
    engines = EngineRegistry(
        load_catalog(settings.models), await hosted_engines(hub) if hub else None
    )
    recorder = Recorder(db, interval=settings.accounting_flush_seconds)
    redis = redis_client(settings.redis_url, settings.redis_timeout)
    key_cache = KeyCache(settings.auth_cache_ttl)
    bus: Bus | None = RedisBus(redis) if redis is not None else None
    if bus is None and hub is not None:
        from maestrale.hub.bus import HubBus

        bus = HubBus(hub)
    invalidator = Invalidator(key_cache, bus)
    limits = build_limits(settings, db, redis, HubCounters(hub) if hub is not None else None)
    secret_key = load_or_create_secret(settings.data_dir, secret_value(settings.secret_key))
    blobs = make_blob_store(settings)
    artifacts = ArtifactFiles(blobs, settings.data_dir / "models")
    invalidator.subscribe_local(limits.provider.on_invalidation)
    gateway = Gateway(
        engines,
        recorder,
        db,
        hooks=[limits.hook],
        artifacts=artifacts.local,
        fetch_policy=settings.fetch_policy,
    )
    services = Services(
        settings=settings,
        db=db,
        engines=engines,
        recorder=recorder,
        redis=redis,
        key_cache=key_cache,
        invalidator=invalidator,
        limits=limits,
        gateway=gateway,
        platform_calls=CompletionCalls(gateway),
        blobs=blobs,
        secret_key=secret_key,
        histories=Histories(),
        secrets=SecretBox(secret_key, previous_secrets(settings)),
        hub=hub,
        workflows=temporal_engine(settings, settings.temporal_address),
        artifacts=artifacts,
    )
    services.job_registry = build_registry(services)
    open_connectors(services)
    recorder.start()
    try:
        yield services
    finally:
        if services.connectors is not None:
            await services.connectors.aclose()
        await recorder.close()
        await engines.aclose()
        if redis is not None:
            with contextlib.suppress(Exception):
                await redis.aclose()
        if hub is not None:
            await hub.aclose()
        await db.dispose()
        await untrace()


def open_connectors(services: Services) -> None:
    """The connector runtime (pooled MCP sessions), and the toolboxes of the tools the server
    runs for conversations: connectors' and the built-in ones."""
    from maestrale.connectors.dependencies import connector_settings
    from maestrale.connectors.mcp.client import McpClients
    from maestrale.connectors.network import ConnectorRuntime
    from maestrale.connectors.toolbox import ConnectorToolboxes
    from maestrale.tools.toolboxes import BuiltinToolboxes, JoinedToolboxes, builtin_tools

    allow_private = services.settings.connector_allow_private
    services.connectors = ConnectorRuntime(
        services.db,
        services.secrets,
        McpClients(allow_private=allow_private),
        allow_private=allow_private,
        cache_ttl=services.settings.connector_cache_ttl,
    )
    connectors = ConnectorToolboxes(services.connectors, connector_settings(services.settings))
    builtins = BuiltinToolboxes(services, builtin_tools(services.settings))
    # Built-in tools first: a connector's tool never shadows one of theirs.
    services.toolboxes = JoinedToolboxes([builtins, connectors])


def temporal_engine(settings: Settings, address: str | None) -> TemporalEngine | None:
    """The Temporal client of the workflows API, for the frontend at `address` (None: off)."""
    if not address:
        return None
    return TemporalEngine(
        TemporalTarget(
            address=address,
            namespace=settings.temporal_namespace,
            tls=settings.temporal_tls,
            api_key=secret_value(settings.temporal_api_key),
        )
    )


async def start_embedded_temporal(
    stack: contextlib.AsyncExitStack, settings: Settings, services: Services
) -> None:
    """The embedded Temporal dev server, started for the life of `stack` (the process's), and
    a client of it as `services.workflows`; when it cannot start, workflows are off and
    `services.workflows_off` says why (logged at ERROR with the fix)."""
    from maestrale.workflows.temporal.devserver import (
        TemporalUnavailable,
        embedded_temporal,
        start_failure,
    )

    try:
        address = await stack.enter_async_context(embedded_temporal(settings))
    except TemporalUnavailable as exc:
        services.workflows_off = start_failure(exc)
        return
    services.workflows = temporal_engine(settings, address)


async def first_start(db: Database, settings: Settings) -> None:
    """The bootstrap of a serving process (or of the supervisor of several), from its settings
    (`core.auth.bootstrap`)."""
    async with db.transaction() as work:
        created = await bootstrap(
            work.session,
            api_key=secret_value(settings.bootstrap_api_key),
            admin_key=secret_value(settings.bootstrap_admin_key),
            keys_file=settings.data_dir / "bootstrap-keys",
        )
    if created is not None:
        bootstrap_log.info(
            "created the default organization and workspace %s", created.workspace_id
        )


async def connect_hub(path: Path) -> HubClient:
    """The connection of a server process of `serve --workers` to its supervisor's hub. Losing it
    means the supervisor is gone: the process then stops as on SIGTERM (it would be left with
    limits and engines it can no longer reach)."""
    hub = await HubClient.connect(path)

    def lost() -> None:
        log.error("lost the connection to the supervisor's hub; stopping")
        os.kill(os.getpid(), signal.SIGTERM)

    hub.on_lost = lost
    return hub


async def hosted_engines(hub: HubClient) -> dict[str, EngineFactory]:
    """The engine factories of a server process with a hub: proxies of the engines it hosts."""
    from maestrale.hub.engines import remote_factories

    return remote_factories(hub, await hub.call("engines.describe"))
