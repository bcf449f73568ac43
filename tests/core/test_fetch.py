"""The URL fetcher refuses loopback, private and link-local hosts (also behind a redirect),
and enforces its byte limit; data URLs decode in process."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from maestrale.core.fetch import (
    FetchFailed,
    FetchPolicy,
    FetchTooLarge,
    UrlNotAllowed,
    address_allowed,
    fetch_url,
    literal_address,
)


@pytest.fixture
async def local_site() -> AsyncIterator[str]:
    async def big(_: web.Request) -> web.Response:
        return web.Response(body=b"x" * 5000)

    async def small(_: web.Request) -> web.Response:
        return web.Response(body=b"hello", content_type="text/plain")

    async def hop(_: web.Request) -> web.Response:
        raise web.HTTPFound("/small")

    app = web.Application()
    app.router.add_get("/big", big)
    app.router.add_get("/small", small)
    app.router.add_get("/hop", hop)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.9",
        "192.168.1.1",
        "169.254.169.254",
        "::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "0.0.0.0",
        "100.64.0.1",
        "fd00::1",
        # Not global unicast, though Python's `is_global` says so (issue 30).
        "fec0::1",  # site-local (deprecated)
        "3fff::1",  # documentation (RFC 9637)
        "5f00::1",  # SRv6 segment identifiers
        "2001:db8::1",  # documentation
        "2001:2::1",  # benchmarking
        "100::1",  # discard
        "ff0e::1",  # global multicast
    ],
)
def test_private_addresses_are_refused(address: str) -> None:
    assert not address_allowed(address, FetchPolicy())


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("169.254.43518", "169.254.169.254"),
        ("::1", "::1"),
        ("example.com", None),
    ],
)
def test_numeric_hosts_are_read_as_the_resolver_reads_them(host: str, address: str | None) -> None:
    literal = literal_address(host)
    assert (str(literal) if literal else None) == address


async def test_decimal_ipv4_url_is_refused_before_any_connection() -> None:
    with pytest.raises(UrlNotAllowed, match=r"2130706433 \(127\.0\.0\.1\) is a loopback"):
        await fetch_url("http://2130706433:9/", FetchPolicy())


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::a9fe:a9fe",  # NAT64 of the cloud metadata address
        "64:ff9b::7f00:1",
        "64:ff9b::10.0.0.1",
        "64:ff9b:1::a9fe:a9fe",  # local-use NAT64
        "64:ff9b:1:a9fe:a9:fe00::",
        "2002:a9fe:a9fe::1",  # 6to4
        "2002:7f00:1::",
        "2002:0a00:0001::1",
        "::a9fe:a9fe",  # IPv4-compatible
        "::127.0.0.1",
        "::ffff:0:a9fe:a9fe",  # IPv4-translated
        "::ffff:0:10.0.0.1",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
        "2001:0:a9fe:a9fe:0:f227:80ff:fffe",  # Teredo, metadata server, client 127.0.0.1
        "64:ff9b::e000:1",  # NAT64 of multicast
    ],
)
def test_ipv6_forms_of_private_ipv4_are_refused(address: str) -> None:
    assert not address_allowed(address, FetchPolicy())


@pytest.mark.parametrize(
    "url", ["http://[64:ff9b::a9fe:a9fe]/latest/meta-data/", "http://[2002:a9fe:a9fe::]/"]
)
async def test_ipv6_literal_of_metadata_address_is_refused(url: str) -> None:
    with pytest.raises(UrlNotAllowed):
        await fetch_url(url, FetchPolicy())


def test_ipv6_forms_of_public_ipv4_are_judged_by_the_ipv4() -> None:
    assert address_allowed("64:ff9b::808:808", FetchPolicy())
    assert address_allowed("2002:808:808::1", FetchPolicy())
    assert address_allowed("::ffff:8.8.8.8", FetchPolicy())
    assert not address_allowed("64:ff9b::e000:1", FetchPolicy(allow_private=True))
    assert address_allowed("64:ff9b::a9fe:a9fe", FetchPolicy(allow_private=True))


def test_public_addresses_are_allowed() -> None:
    assert address_allowed("93.184.216.34", FetchPolicy())
    assert address_allowed("2606:4700::1111", FetchPolicy())
    assert address_allowed("2a00:1450:4007:80e::200e", FetchPolicy())
    assert address_allowed("fec0::1", FetchPolicy(allow_private=True))
    assert address_allowed("10.0.0.1", FetchPolicy(allow_private=True))


@pytest.mark.parametrize("path", ["/small", "/hop"])
async def test_loopback_urls_are_refused(local_site: str, path: str) -> None:
    with pytest.raises(UrlNotAllowed, match="loopback"):
        await fetch_url(local_site + path, FetchPolicy())
    with pytest.raises(UrlNotAllowed):
        await fetch_url(local_site.replace("127.0.0.1", "localhost") + path, FetchPolicy())


async def test_allowed_when_configured_and_redirects_are_followed(local_site: str) -> None:
    fetched = await fetch_url(local_site + "/hop", FetchPolicy(allow_private=True))
    assert fetched.content == b"hello"
    assert fetched.content_type == "text/plain"


async def test_byte_limit(local_site: str) -> None:
    with pytest.raises(FetchTooLarge):
        await fetch_url(local_site + "/big", FetchPolicy(allow_private=True, max_bytes=1000))


async def test_other_schemes_are_refused() -> None:
    for url in ("file:///etc/passwd", "ftp://example.com/x", "gopher://x"):
        with pytest.raises(UrlNotAllowed):
            await fetch_url(url, FetchPolicy())


async def test_data_urls() -> None:
    payload = base64.b64encode(b"%PDF-1.4 tiny").decode()
    fetched = await fetch_url(f"data:application/pdf;base64,{payload}", FetchPolicy())
    assert fetched.content == b"%PDF-1.4 tiny"
    assert fetched.content_type == "application/pdf"
    with pytest.raises(FetchTooLarge):
        await fetch_url(f"data:application/pdf;base64,{payload}", FetchPolicy(max_bytes=4))


async def test_timeout(local_site: str) -> None:
    del local_site
    server = await asyncio.start_server(lambda r, w: asyncio.sleep(5), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with pytest.raises(FetchFailed, match="longer than"):
        await fetch_url(
            f"http://127.0.0.1:{port}/", FetchPolicy(allow_private=True, timeout_seconds=0.3)
        )
    server.close()
