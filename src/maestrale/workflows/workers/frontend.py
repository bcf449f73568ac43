"""The Temporal frontend a serving process gives workers: the worker proxy, served for the life
of the process, with keys resolved as the HTTP API resolves them.

Its port: `temporal_proxy_port` when set; else (0, the default) the one it had the last time on
this data dir when that is still free, so that workers, which learn it from `workers/whoami`
once, find it again after a restart; else any free port, so that two servers run side by side.
`serve --workers N` reserves it once for its N processes (`reserve_port`)."""

from __future__ import annotations

import contextlib
import logging
import socket
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
        engine.proxy_failure = f"{exc}; install maestrale[workflows]"
        log.error("workers cannot reach Temporal: %s", engine.proxy_failure)
        return None

    async def load(key_hash: str) -> Principal | None:
        async with db.transaction() as work:
            return await KeyRepository(work.session).principal_for_hash(key_hash)

    async def resolve(key: str) -> Principal | None:
        principal = await key_cache.lookup(hash_key(key), load)
        if principal is not None:
            key_cache.mark_used(principal.key_id)
        return principal

    host = proxy_host(settings)
    failure = ""
    for port in proxy_ports(settings):
        try:
            bound = await stack.enter_async_context(
                # The processes of `serve --workers N` (each with the supervisor's hub) share it.
                serve_worker_proxy(
                    engine, resolve, host, port, shared=settings.hub_socket is not None
                )
            )
        except OSError as exc:
            failure = str(exc)
            continue
        remember_port(settings, bound)
        engine.proxy_port = bound
        return bound
    engine.proxy_failure = f"{failure} (the port is busy, or the host not this machine's)"
    log.error(
        "workers cannot reach Temporal: %s; set MAESTRALE_TEMPORAL_PROXY_PORT to a free port,"
        " or to 0 for any",
        engine.proxy_failure,
    )
    return None


_PORT_FILE = "worker-proxy.port"


def proxy_host(settings: Settings) -> str:
    return settings.temporal_proxy_host or settings.host


def proxy_ports(settings: Settings) -> list[int]:
    """The ports to try for the worker proxy, in turn: the fixed one; else the last one on this
    data dir, then any free one (0)."""
    if settings.temporal_proxy_port:
        return [settings.temporal_proxy_port]
    try:
        last = int((settings.data_dir / _PORT_FILE).read_text())
    except (OSError, ValueError):
        return [0]
    return [last, 0] if 0 < last < 65536 else [0]


def remember_port(settings: Settings, port: int) -> None:
    """Keep the port a free-port proxy got, for the next start on this data dir."""
    if not settings.temporal_proxy_port:
        with contextlib.suppress(OSError):
            (settings.data_dir / _PORT_FILE).write_text(f"{port}\n")


def reserve_port(settings: Settings) -> socket.socket | None:
    """The worker proxy's port, held for the processes of `serve --workers N`: a socket bound
    (not listening) exclusively, so that no other program holds or takes the port, then opened
    to SO_REUSEPORT, so that the processes bind it too (`shared`); its port is theirs. None
    (logged) when no port of `proxy_ports` can be bound."""
    host = proxy_host(settings)
    failure: OSError | None = None
    for port in proxy_ports(settings):
        try:
            info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
            family, kind, proto, _, address = info[0]
            sock = socket.socket(family, kind, proto)
        except OSError as exc:
            failure = exc
            continue
        try:
            sock.bind(address)  # without SO_REUSEPORT: refused if anyone holds the port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        except OSError as exc:
            sock.close()
            failure = exc
            continue
        remember_port(settings, int(sock.getsockname()[1]))
        return sock
    log.error(
        "workers cannot reach Temporal: the worker proxy's port on %s cannot be reserved (%s);"
        " set MAESTRALE_TEMPORAL_PROXY_PORT to a free port, or to 0 for any",
        host,
        failure,
    )
    return None
