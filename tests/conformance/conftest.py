"""A real `maestrale serve` on a free port with a temporary data dir, for the official SDK."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.app_fixtures import ADMIN_KEY, API_KEY
from tests.support.live import start_server, stop_server


@dataclass(frozen=True)
class LiveServer:
    url: str
    data_dir: Path
    database_url: str
    api_key: str
    admin_key: str


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    data_dir = tmp_path_factory.mktemp("live") / "data"
    data_dir.mkdir()
    proc, url = start_server(data_dir)
    try:
        yield LiveServer(
            url=url,
            data_dir=data_dir,
            database_url=f"sqlite+aiosqlite:///{(data_dir / 'maestrale.db').resolve()}",
            api_key=API_KEY,
            admin_key=ADMIN_KEY,
        )
    finally:
        stop_server(proc)
