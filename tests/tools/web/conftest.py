"""The web_search tests: a SearxNG-compatible server, shared by a module's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.mcp_servers import serve_asgi
from tests.tools.web.search_server import SearchProbe, search_app


@pytest.fixture(scope="module")
def search_server() -> Iterator[tuple[str, SearchProbe]]:
    """(base URL, probe) of the search server, on 127.0.0.1."""
    probe = SearchProbe()
    with serve_asgi(search_app(probe)) as base:
        yield base, probe
