"""Shared fixtures. A database test runs on SQLite; one marked `both_databases` (the tests of the
SQL that differs between the backends: repositories, migrations, the queue, locking, dialect
paths) runs on Postgres too when MAESTRALE_TEST_POSTGRES_URL is set, and every one does when
MAESTRALE_TEST_EVERY_BACKEND is set as well (the `backend` fixture is parametrised here).

CI's tier: a test marked `ci_tier` (the fleet's and the process faults' end-to-end suites, the
official worker, real training through a killed worker) or driving the console in Chromium (the
`browser` fixture) runs where MAESTRALE_TEST_CI_TIER=1, which `.ci/run` sets, and is skipped, with
that reason, by a plain `make test`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from maestrale.core.db import Database
from tests.support import databases
from tests.support.tiers import CI_TIER, SKIP_REASON, ci_tier_runs

pytest_plugins = ["tests.support.app_fixtures", "tests.support.temporal"]


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return databases.make_sqlite_template(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="session")
async def postgres_url() -> AsyncIterator[str | None]:
    if "postgres" not in databases.backends():
        yield None
        return
    url = await databases.create_postgres_database()
    yield url
    await databases.drop_postgres_database(url)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{databases.BOTH}(*modules): run on Postgres as well as SQLite; names the repository"
        " modules whose SQL the tests cover (tests/core/test_suite_backends.py checks that every"
        " repository module is named)",
    )
    config.addinivalue_line(
        "markers",
        f"{CI_TIER}: CI's tier, run where MAESTRALE_TEST_CI_TIER=1 (.ci/run sets it), skipped else",
    )
    config.addinivalue_line(
        "markers",
        "sdk3_group: the conformance module of a group only mistralai 3.x has, run again in the"
        " 3.x pass (tests/conformance/test_sdk_majors.py), whose live server is on Postgres",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        marked = metafunc.definition.get_closest_marker(databases.BOTH) is not None
        metafunc.parametrize("backend", databases.backends(marked), indirect=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests given the longest `timeout` (real training, the official worker, the cluster,
    local models loading) first, the rest in their order: on the workers of `make test` the long
    ones start at once instead of ending the run alone."""

    def allowed(item: pytest.Item) -> float:
        mark = item.get_closest_marker("timeout")
        return float(mark.args[0]) if mark is not None and mark.args else 0.0

    items.sort(key=lambda item: -allowed(item))
    if not ci_tier_runs():
        skip = pytest.mark.skip(reason=SKIP_REASON)
        for item in items:
            browser = "browser" in getattr(item, "fixturenames", ())
            if browser or item.get_closest_marker(CI_TIER) is not None:
                item.add_marker(skip)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def database_url(
    backend: str, sqlite_template: Path, postgres_url: str | None, tmp_path: Path
) -> AsyncIterator[str]:
    """A migrated, empty database of the test's backend."""
    if backend == "sqlite":
        yield databases.copy_sqlite(sqlite_template, tmp_path)
        return
    assert postgres_url is not None
    await databases.empty_postgres(postgres_url)
    yield postgres_url


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url, strict=True)
    yield database
    await database.dispose()
