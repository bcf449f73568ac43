"""A real `maestrale serve` on a free port with a temporary data dir, for the official SDK."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mistralai.client._version import __version__ as SDK_VERSION

from tests.support import databases
from tests.support.app_fixtures import ADMIN_KEY, API_KEY
from tests.support.live import start_server, stop_server
from tests.support.sdks import OWN, VERSIONS, SdkProcess

# The conformance tests run in-process with the venv's SDK (2.8.0), and in CI again with the
# newest 3.x first on the path (test_sdk_majors.py); what 3.x dropped is skipped there.
only_before_3 = pytest.mark.skipif(
    int(SDK_VERSION.split(".")[0]) >= 3,
    reason="mistralai 3.x dropped chat completion events, campaigns and fields (served for 2.x)",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under another release (test_sdk_majors.py), the cross-release tests are left out: they
    already speak with every release, from the venv's own."""
    if SDK_VERSION != OWN:
        items[:] = [item for item in items if "any_sdk" not in getattr(item, "fixturenames", ())]


@dataclass(frozen=True)
class LiveServer:
    url: str
    data_dir: Path
    database_url: str
    api_key: str
    admin_key: str


# Set (by test_sdk_majors.py, where MAESTRALE_TEST_POSTGRES_URL is set): the live server runs on
# a fresh Postgres database instead of SQLite.
LIVE_POSTGRES = "MAESTRALE_TEST_LIVE_POSTGRES"


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    data_dir = tmp_path_factory.mktemp("live") / "data"
    data_dir.mkdir()
    database_url = f"sqlite+aiosqlite:///{(data_dir / 'maestrale.db').resolve()}"
    postgres = bool(os.environ.get(LIVE_POSTGRES) and os.environ.get(databases.POSTGRES_ENV))
    if postgres:
        database_url = asyncio.run(databases.create_postgres_database())
    proc, url = start_server(
        data_dir, env={"MAESTRALE_DATABASE_URL": database_url} if postgres else None
    )
    try:
        yield LiveServer(
            url=url,
            data_dir=data_dir,
            database_url=database_url,
            api_key=API_KEY,
            admin_key=ADMIN_KEY,
        )
    finally:
        stop_server(proc)
        if postgres:
            asyncio.run(databases.drop_postgres_database(database_url))


@pytest.fixture(scope="session", params=VERSIONS)
def any_sdk(request: pytest.FixtureRequest, live_server: LiveServer) -> Iterator[SdkProcess]:
    """Each release the server speaks with (2.8.0, the newest 2.x and 3.x) in its own process,
    calling the live server with the workspace key."""
    sdk = SdkProcess(request.param, live_server.url, live_server.api_key)
    try:
        yield sdk
    finally:
        sdk.close()
