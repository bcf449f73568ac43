"""Outage fixtures: the test's Postgres (and Redis) reached through a fault-injecting proxy
(`tests.support.fault_proxy`), so that a test can refuse, cut or black-hole the connections of
its own server without touching the machine's shared ones."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from tests.support import databases
from tests.support.app_fixtures import test_settings
from tests.support.fault_proxy import FaultProxy

REDIS_ENV = "MAESTRALE_TEST_REDIS_URL"

AppFactory = Callable[..., AbstractAsyncContextManager[FastAPI]]


@pytest.fixture
async def pg_url(postgres_url: str | None) -> str:
    """The run's Postgres test database, emptied (skips without MAESTRALE_TEST_POSTGRES_URL)."""
    if postgres_url is None:
        pytest.skip(f"{databases.POSTGRES_ENV} is not set")
    await databases.empty_postgres(postgres_url)
    return postgres_url


@pytest.fixture
def pg_proxy(pg_url: str) -> Iterator[tuple[FaultProxy, str]]:
    """A fault proxy in front of Postgres, and the test database's URL through it."""
    with FaultProxy.of_url(pg_url) as (proxy, url):
        yield proxy, url


@pytest.fixture
def redis_proxy() -> Iterator[tuple[FaultProxy, str]]:
    """A fault proxy in front of the test Redis (skips without MAESTRALE_TEST_REDIS_URL)."""
    url = os.environ.get(REDIS_ENV)
    if not url:
        pytest.skip(f"{REDIS_ENV} is not set")
    with FaultProxy.of_url(url) as (proxy, through):
        yield proxy, through


@pytest.fixture
def make_app(tmp_path: Path) -> AppFactory:
    """`async with make_app(database_url, **settings) as app`: the app, its lifespan running."""

    @asynccontextmanager
    async def started(database_url: str, **overrides: Any) -> AsyncIterator[FastAPI]:
        settings = test_settings(database_url, tmp_path / "data", **overrides)
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            yield app

    return started
