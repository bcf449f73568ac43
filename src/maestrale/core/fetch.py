"""Fetching a URL a client names (`document_url`, `file_url`, ...) without opening the server's
network to it: server-side request forgery is refused by construction.

Every address a host name resolves to is checked before connecting (and the connection goes to
the checked address, so a second DNS answer cannot swap it), redirects are followed by hand and
each hop is checked again, the body is read under a byte limit and the whole fetch under a time
limit. `data:` URLs are decoded in process.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ipaddress
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes, urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from maestrale.core.errors import AppError, BadRequest
from maestrale.core.uow import Release
from maestrale.tracing import outbound_headers

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 5


class UrlNotAllowed(BadRequest):
    code = "url_not_allowed"


class FetchFailed(BadRequest):
    code = "fetch_failed"


class FetchTooLarge(AppError):
    status_code = 413
    code = "payload_too_large"


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """What a fetch may reach and how much it may read."""

    allow_private: bool = False
    max_bytes: int = 50 * 1024 * 1024
    timeout_seconds: float = 30.0


@dataclass(frozen=True, slots=True)
class Fetched:
    content: bytes
    content_type: str | None
    url: str


# IPv6 ranges that carry the IPv4 address a packet is delivered to (or through): each embedded
# address must pass the IPv4 rules, or `64:ff9b::a9fe:a9fe` reaches the cloud metadata service
# through a NAT64 gateway.
_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215, local use only
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")  # RFC 4291, deprecated
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # RFC 2765 (SIIT)

# Global unicast IPv6 is an allow-list, not Python's `is_global` (which lets `fec0::/10`,
# `3fff::/20` and `5f00::/16` through, and differs across releases): 2000::/3, less the
# special-purpose blocks inside it (IANA's IPv6 Special-Purpose Address Registry). Everything
# outside 2000::/3 (ULA, site-local, link-local, multicast, loopback, discard, ...) is refused.
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_SPECIAL_UNICAST = (
    ipaddress.IPv6Network("2001::/23"),  # IETF protocol assignments (Teredo is judged first)
    ipaddress.IPv6Network("2001:db8::/32"),  # documentation
    ipaddress.IPv6Network("3fff::/20"),  # documentation (RFC 9637)
    ipaddress.IPv6Network("5f00::/16"),  # SRv6 segment identifiers (RFC 9602)
)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address stands for (none for a plain IPv6 address)."""
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)  # the relay server and the (de-obfuscated) client
    if ip in _NAT64_WELL_KNOWN or ip in _IPV4_COMPATIBLE or ip in _IPV4_TRANSLATED:
        return [ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)]
    return []


def literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a URL's host names by itself, without DNS: an IP literal, or one of the
    numeric IPv4 forms the system resolver takes (`2130706433`, `0x7f.1`, `017700000001`),
    which `ipaddress` does not read. None for a host name."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


def address_allowed(address: str, policy: FetchPolicy) -> bool:
    """A global unicast address, or any unicast address when the policy allows private ones.

    An IPv6 address that stands for IPv4 ones (mapped, compatible, translated, NAT64, 6to4,
    Teredo) is judged by the IPv4 rules for every address it embeds: that is where it leads. Its
    prefix's own class is no guide, and differs across Python releases (6to4's 2002::/16 counts
    as private before 3.11.9 / 3.12.4, as global after)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if not isinstance(ip, ipaddress.IPv6Address):
        return _ip_allowed(ip, policy)
    if ip.ipv4_mapped is not None:
        return _ip_allowed(ip.ipv4_mapped, policy)
    if ip in _NAT64_LOCAL and not policy.allow_private:
        # Local-use NAT64 (the operator picks where the IPv4 address sits): never a public
        # destination, whatever it embeds.
        return False
    embedded = _embedded_ipv4(ip)
    if embedded:
        return all(_ip_allowed(v4, policy) for v4 in embedded)
    if not policy.allow_private and not _global_unicast(ip):
        return False
    return _ip_allowed(ip, policy)


def _global_unicast(ip: ipaddress.IPv6Address) -> bool:
    return ip in _GLOBAL_UNICAST and not any(ip in block for block in _SPECIAL_UNICAST)


def _ip_allowed(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, policy: FetchPolicy) -> bool:
    if ip.is_multicast or ip.is_unspecified:
        return False
    if policy.allow_private:
        return True
    return ip.is_global and not (ip.is_private or ip.is_loopback or ip.is_link_local)


class _GuardedResolver(AbstractResolver):
    """Resolves through the system resolver and refuses any answer outside the policy."""

    def __init__(self, policy: FetchPolicy) -> None:
        self._policy = policy

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(
                host, port, type=socket.SOCK_STREAM, family=socket.AF_UNSPEC
            )
        except socket.gaierror as exc:
            raise FetchFailed(f"cannot resolve host {host!r}") from exc
        results: list[ResolveResult] = []
        for fam, _, proto, _, sockaddr in infos:
            address = str(sockaddr[0])
            if not address_allowed(address, self._policy):
                raise UrlNotAllowed(
                    f"host {host!r} resolves to {address}, a loopback, private, link-local or "
                    "reserved address; such URLs are refused"
                )
            results.append(
                {
                    "hostname": host,
                    "host": address,
                    "port": int(sockaddr[1]),
                    "family": fam,
                    "proto": proto,
                    "flags": socket.AI_NUMERICHOST,
                }
            )
        return results

    async def close(self) -> None:
        return None


def decode_data_url(url: str, policy: FetchPolicy) -> Fetched:
    """`data:[<type>][;base64],<data>` (RFC 2397)."""
    header, sep, payload = url[5:].partition(",")
    if not sep:
        raise BadRequest("malformed data URL: no ',' before the data", code="invalid_url")
    params = header.split(";")
    is_base64 = params[-1].strip().lower() == "base64"
    content_type = params[0].strip() or "text/plain"
    if len(payload) > policy.max_bytes * 4 // 3 + 8:
        raise FetchTooLarge(f"the data URL holds more than {policy.max_bytes} bytes")
    try:
        data = (
            base64.b64decode(payload + "=" * (-len(payload) % 4), validate=False)
            if is_base64
            else unquote_to_bytes(payload)
        )
    except (binascii.Error, ValueError) as exc:
        raise BadRequest("malformed data URL: invalid base64", code="invalid_url") from exc
    if len(data) > policy.max_bytes:
        raise FetchTooLarge(f"the data URL holds more than {policy.max_bytes} bytes")
    return Fetched(data, content_type, "data:")


def _check_url(url: str, policy: FetchPolicy) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UrlNotAllowed(f"only http, https and data URLs can be fetched, not {url[:40]!r}")
    if not parts.hostname:
        raise BadRequest("the URL has no host", code="invalid_url")
    # aiohttp connects to an IP-literal host without asking the resolver: check it here.
    literal = literal_address(parts.hostname)
    if literal is None:
        return
    if not address_allowed(str(literal), policy):
        raise UrlNotAllowed(
            f"{parts.hostname} ({literal}) is a loopback, private, link-local or reserved "
            "address; such URLs are refused"
        )


async def fetch_url(url: str, policy: FetchPolicy, release: Release | None = None) -> Fetched:
    """The body of `url` (http, https or data), within the policy's address, size and time
    limits. Raises UrlNotAllowed (400), FetchTooLarge (413) or FetchFailed (400). `release`
    ends the caller's transaction before the network is reached (a data URL is decoded here)."""
    if url[:5].lower() == "data:":
        return decode_data_url(url, policy)
    _check_url(url, policy)
    if release is not None:
        await release()
    connector = aiohttp.TCPConnector(resolver=_GuardedResolver(policy), use_dns_cache=False)
    timeout = aiohttp.ClientTimeout(total=policy.timeout_seconds)
    try:
        async with aiohttp.ClientSession(
            connector=connector, timeout=timeout, trust_env=False
        ) as session:
            return await _follow(session, url, policy)
    except AppError:
        raise
    except TimeoutError as exc:
        raise FetchFailed(
            f"fetching the URL took longer than {policy.timeout_seconds:g} s"
        ) from exc
    except aiohttp.ClientError as exc:
        raise FetchFailed(f"cannot fetch the URL: {type(exc).__name__}") from exc


async def _follow(session: aiohttp.ClientSession, url: str, policy: FetchPolicy) -> Fetched:
    for _ in range(_MAX_REDIRECTS + 1):
        _check_url(url, policy)
        headers = outbound_headers(None)  # the caller's trace and trigger depth, when any
        async with session.get(url, allow_redirects=False, headers=headers) as response:
            if response.status in _REDIRECTS and "Location" in response.headers:
                url = urljoin(url, response.headers["Location"])
                continue
            if response.status >= 400:
                raise FetchFailed(f"the URL answered HTTP {response.status}")
            return Fetched(await _read_limited(response, policy), response.content_type, url)
    raise FetchFailed(f"more than {_MAX_REDIRECTS} redirects")


async def _read_limited(response: aiohttp.ClientResponse, policy: FetchPolicy) -> bytes:
    declared: Any = response.content_length
    if declared is not None and declared > policy.max_bytes:
        raise FetchTooLarge(f"the URL's content is over the {policy.max_bytes}-byte limit")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > policy.max_bytes:
            raise FetchTooLarge(f"the URL's content is over the {policy.max_bytes}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)
