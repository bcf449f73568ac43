"""The aiohttp session of one upstream: its connection pool, default headers and proxy."""

from __future__ import annotations

import urllib.request
from collections.abc import Mapping

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ConnectionKey
from yarl import URL

from maestrale.engines.openai_compat.options import EngineOptions

# How long an idle pooled connection is kept (seconds), as httpx did.
KEEPALIVE_EXPIRY = 5.0


class _IdleCappedConnector(aiohttp.TCPConnector):
    """A connector that keeps at most `max_idle` idle connections; more are closed on release."""

    def __init__(self, *, max_idle: int, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._max_idle = max_idle

    def _release(
        self, key: ConnectionKey, protocol: ResponseHandler, *, should_close: bool = False
    ) -> None:
        idle = self._conns.get(key)
        if idle is not None and len(idle) >= self._max_idle:
            should_close = True
        super()._release(key, protocol, should_close=should_close)


def connector(options: EngineOptions) -> aiohttp.TCPConnector:
    """A pool of `max_connections` connections keeping `max_keepalive_connections` idle ones
    (all of them by default) for `KEEPALIVE_EXPIRY` seconds."""
    limit = options.max_connections
    idle = options.max_keepalive_connections
    if idle == 0:
        return aiohttp.TCPConnector(limit=limit, limit_per_host=limit, force_close=True)
    if idle is None or idle >= limit:
        return aiohttp.TCPConnector(
            limit=limit, limit_per_host=limit, keepalive_timeout=KEEPALIVE_EXPIRY
        )
    return _IdleCappedConnector(
        max_idle=idle, limit=limit, limit_per_host=limit, keepalive_timeout=KEEPALIVE_EXPIRY
    )


def session(options: EngineOptions, headers: Mapping[str, str]) -> aiohttp.ClientSession:
    """The session of one upstream; call inside the event loop that will use it.

    The environment is not trusted wholesale (aiohttp would then read ~/.netrc and look the
    proxy up again on every request): the proxy is resolved once, by `env_proxy`.
    """
    return aiohttp.ClientSession(
        connector=connector(options),
        headers=headers,
        timeout=aiohttp.ClientTimeout(total=options.timeout, connect=options.connect_timeout),
        trust_env=False,
    )


def env_proxy(url: URL) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy that HTTP(S)_PROXY / ALL_PROXY / NO_PROXY give for `url`, with its credentials."""
    proxies = urllib.request.getproxies_environment()
    host = url.host or ""
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    if not proxies or bypass(host, proxies):
        return None, None
    value = proxies.get(url.scheme) or proxies.get("all")
    if not value:
        return None, None
    proxy = URL(value if "://" in value else f"http://{value}")
    auth = None
    if proxy.user is not None:
        auth = aiohttp.BasicAuth(proxy.user, proxy.password or "")
        proxy = proxy.with_user(None)
    return proxy, auth
