"""HTTP clients for connectors (MCP servers and their OAuth2 endpoints) that cannot be turned on
the server's own network: every connection goes to an address that passed the SSRF guard of
`core.fetch` (loopback, private, link-local and reserved addresses refused unless the
configuration allows them), to the very address that was checked, so that a second DNS answer
cannot swap it; TLS still verifies the host name. Redirects are not followed.

The official `mcp` SDK speaks `httpx2`; these clients are `httpx2` clients with a network backend
that resolves and checks before it connects.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpcore2
import httpx2
from httpcore2._backends.auto import AutoBackend
from httpcore2._backends.base import AsyncNetworkStream

from maestrale.core.fetch import FetchPolicy, UrlNotAllowed, address_allowed, literal_address
from maestrale.tracing import inject


class AddressRefused(httpcore2.ConnectError):
    """The host resolves to an address the SSRF guard refuses (raised inside httpx2, which
    wraps it in an `httpx2.ConnectError`: see `refusal_of`)."""


def refusal_of(exc: BaseException) -> AddressRefused | None:
    """The guard's refusal behind an httpx2 error, if that is what it is."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, AddressRefused):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class GuardedBackend(httpcore2.AsyncNetworkBackend):
    """Resolves a host, refuses it unless every address passes the policy, connects to one."""

    def __init__(self, policy: FetchPolicy) -> None:
        self._policy = policy
        self._backend = AutoBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise httpcore2.ConnectError(f"cannot resolve host {host!r}") from exc
        addresses = [str(info[4][0]) for info in infos]
        for address in addresses:
            if not address_allowed(address, self._policy):
                raise AddressRefused(
                    f"host {host!r} resolves to {address}, a loopback, private, link-local or "
                    "reserved address; connectors may not reach it"
                )
        return await self._backend.connect_tcp(
            addresses[0],
            port,
            timeout=timeout,
            local_address=local_address,
            socket_options=socket_options,
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> AsyncNetworkStream:
        raise AddressRefused("connectors do not reach Unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def check_url(url: str, *, allow_private: bool) -> None:
    """Refuse (UrlNotAllowed, a 400) a URL that is not http(s) or names a refused IP literal;
    host names are checked when connecting."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UrlNotAllowed(f"a connector URL must be an http or https URL, not {url[:60]!r}")
    literal = literal_address(parts.hostname)
    if literal is None:
        return
    if not address_allowed(str(literal), FetchPolicy(allow_private=allow_private)):
        raise UrlNotAllowed(
            f"{parts.hostname} ({literal}) is a loopback, private, link-local or reserved "
            "address; connectors may not reach it"
        )


async def check_host(url: str, *, allow_private: bool) -> None:
    """`check_url`, and the addresses the URL's host name resolves to now: a URL that could
    only reach refused addresses is refused up front, before anything is stored. (Connections
    are checked again when made: a host may resolve differently later.) A host that does not
    resolve passes: it may resolve later, and its connections are checked then."""
    check_url(url, allow_private=allow_private)
    host = urlsplit(url).hostname or ""
    if literal_address(host) is not None:
        return
    policy = FetchPolicy(allow_private=allow_private)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return
    for info in infos:
        address = str(info[4][0])
        if not address_allowed(address, policy):
            raise UrlNotAllowed(
                f"host {host!r} resolves to {address}, a loopback, private, link-local or "
                "reserved address; connectors may not reach it"
            )


def guarded_client(
    *,
    allow_private: bool,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> httpx2.AsyncClient:
    """An httpx2 client whose connections pass the SSRF guard; no redirects, no proxy from the
    environment (a proxy would connect on our behalf, past the guard)."""
    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    pool = transport._pool
    assert isinstance(pool, httpcore2.AsyncConnectionPool)
    pool._network_backend = GuardedBackend(FetchPolicy(allow_private=allow_private))
    return httpx2.AsyncClient(
        transport=transport,
        timeout=timeout,
        headers=dict(headers or {}),
        follow_redirects=False,
        trust_env=False,
        event_hooks={"request": [_traced]},
        **kwargs,
    )


async def _traced(request: httpx2.Request) -> None:
    """Pass the caller's trace and trigger depth on to the connector's server (`inject`; a pooled
    MCP session sends the depth of the work that opened it)."""
    inject(request.headers)
