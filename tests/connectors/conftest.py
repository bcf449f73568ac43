"""Connector tests: the app allowed to reach the MCP and OAuth2 servers the tests start on the
loopback interface (refused by default, as every private address is), and clients of it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from mistralai.client import Mistral

from maestrale.app import create_app
from maestrale.core.crypto import SecretBox
from tests.support.app_fixtures import API_KEY, make_client, test_settings
from tests.support.mcp_servers import ServerProbe, serve_mcp
from tests.support.oauth_server import OAuthServer, serve_documents, serve_oauth
from tests.support.protected_mcp import BearerProtected, serve_protected_mcp


@pytest.fixture
async def conn_app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    settings = test_settings(database_url, tmp_path / "data", connector_allow_private=True)
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def conn_client(conn_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(conn_app) as client:
        yield client


@pytest.fixture
async def sdk(conn_app: FastAPI) -> AsyncIterator[Mistral]:
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=conn_app), base_url="http://test")
    async with http:
        yield Mistral(api_key=API_KEY, server_url="http://test", async_client=http)


@pytest.fixture(scope="module")
def tools_server() -> Iterator[tuple[str, ServerProbe]]:
    """A streamable-HTTP MCP server with the tests' tools, shared by a module's tests."""
    with serve_mcp("streamable-http") as served:
        yield served


# The servers of the OAuth2 tests: the test authorization server, an MCP server behind a Bearer
# guard, and a hostile server whose answers each test sets.


@pytest.fixture(scope="module")
def auth() -> Iterator[OAuthServer]:
    with serve_oauth(access_ttl=2) as server:
        yield server


@pytest.fixture(scope="module")
def mcp(auth: OAuthServer) -> Iterator[tuple[str, BearerProtected]]:
    with serve_protected_mcp(auth) as (url, guard, _probe):
        yield url, guard


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[str, dict[str, Any]]]:
    with serve_documents() as (base, docs):
        yield base, docs


@pytest.fixture
def box() -> SecretBox:
    return SecretBox(b"the server secret of this test run")
