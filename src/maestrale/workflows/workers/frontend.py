"""The Temporal frontend a serving process gives workers: the worker proxy, served for the life
of the process, with keys resolved as the HTTP API resolves them."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from maestrale.core.auth.keys import hash_key
from maestrale.core.auth.principal import Principal
from maestrale.core.auth.repository import KeyRepository

if TYPE_CHECKING:
    from maestrale.config import Settings
    from maestrale.core.auth.cache import KeyCache
    from maestrale.core.db import Database
    from maestrale.workflows.temporal.engine import TemporalEngine

log = logging.getLogger("maestrale.workflows.proxy")


async def start_worker_proxy(
    stack: contextlib.AsyncExitStack,
    engine: TemporalEngine,
    *,
    db: Database,
    key_cache: KeyCache,
    settings: Settings,
) -> int | None:
    """Serve the worker proxy of `engine` for the life of `stack`, resolving keys through
    `key_cache` (then `db`); its port, or None (logged: the API still runs, `workers/whoami`
    answers 503) when it cannot listen."""
    try:
        from maestrale.workflows.temporal.proxy import serve_worker_proxy
    except ImportError as exc:  # grpcio comes with the [workflows] extra
        log.error("workers cannot reach Temporal: %s; install maestrale[workflows]", exc)
        return None

    async def load(key_hash: str) -> Principal | None:
        async with db.transaction() as work:
            return await KeyRepository(work.session).principal_for_hash(key_hash)

    async def resolve(key: str) -> Principal | None:
        principal = await key_cache.lookup(hash_key(key), load)
        if principal is not None:
            key_cache.mark_used(principal.key_id)
        return principal

    host = settings.temporal_proxy_host or settings.host
    try:
        port = await stack.enter_async_context(
            # The processes of `serve --workers N` (each with the supervisor's hub) share it.
            serve_worker_proxy(
                engine,
                resolve,
                host,
                settings.temporal_proxy_port,
                shared=settings.hub_socket is not None,
            )
        )
    except OSError as exc:
        log.error(
            "workers cannot reach Temporal: %s (MAESTRALE_TEMPORAL_PROXY_PORT chooses the port,"
            " 0 any free one)",
            exc,
        )
        return None
    engine.proxy_port = port
    return port
