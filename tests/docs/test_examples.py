"""Every code example of the docs (docs/**/*.md, README.md) runs against a live `maestrale serve`:
how they are found and run is in tests/docs/examples.py. One test per example, its id
`<page>:<line of its fence>`:

    .venv/bin/pytest -p no:randomly -n 0 tests/docs -q -k chat          # one page's examples
    .venv/bin/pytest -p no:randomly -n 0 tests/docs -q -k "chat.md:42"  # one example

The server: the default catalog (the real local models), SQLite (a copy of the migrated template),
one process (`MAESTRALE_WORKERS=1`), the embedded Temporal on as by default; its bootstrap keys
are the examples' MISTRAL_API_KEY (a workspace key) and MAESTRALE_ADMIN_KEY (an admin key).

All the examples are one class, so `--dist loadscope` gives them to one worker, which starts one
server: the CPU the examples cost is mostly the server's (its start, ~11 s on an idle 2-core
machine, and each local model loading at its first use), and a server per worker would pay its
start and most model loads again, for no gain on cores the rest of the suite keeps busy. The
class's `timeout` sorts it among the first (tests/conftest.py), so it runs beside the suite's
other long modules, not at the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docs.examples import CURL, Example, Outcome, Runner, collect, run_curl
from tests.support import databases
from tests.support.app_fixtures import ADMIN_KEY, API_KEY
from tests.support.live import free_port, start_server, stop_server
from tests.support.sdks import NEWEST_3, sdk_dir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = collect(ROOT / "docs", ROOT / "README.md")
# The longest an example may take (the first call of a local model loads it: a few seconds).
TIMEOUT = 90.0
SERVER_ENV = {
    # Workflows on, as `maestrale serve` has them by default (the embedded Temporal adds about a
    # second to the start), so that examples of `whoami`, executions and schedules run; its
    # worker proxy on a free port, not 7233.
    "MAESTRALE_TEMPORAL_EMBEDDED": "true",
    "MAESTRALE_TEMPORAL_PROXY_PORT": "0",
}


@pytest.fixture(scope="session")
def docs_server(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[str]:
    """One live server for the examples run by this worker, on a copy of the migrated template
    database (no migrations at start); its URL."""
    where = tmp_path_factory.mktemp("docs-server")
    env = {**SERVER_ENV, "MAESTRALE_DATABASE_URL": databases.copy_sqlite(sqlite_template, where)}
    port = free_port()
    try:
        proc, url = start_server(where / "data", env=env, port=port, ready_seconds=180)
    except RuntimeError as failed:
        log = where / f"server-{port}.log"
        raise RuntimeError(f"{failed}\n{log.read_text()[-5000:]}") from None
    try:
        yield url
    finally:
        stop_server(proc)


def example_env() -> dict[str, str]:
    return {**os.environ, "MISTRAL_API_KEY": API_KEY, "MAESTRALE_ADMIN_KEY": ADMIN_KEY}


@pytest.fixture(scope="session")
def docs_runner() -> Iterator[Runner]:
    """The program the Python examples of this worker are forked from, the newest 3.x SDK first
    on its path."""
    where = sdk_dir(NEWEST_3)
    assert where is not None
    if not (where / "mistralai").is_dir():
        pytest.skip(f"mistralai {NEWEST_3} is not installed in {where}: run make")
    runner = Runner([str(where)], example_env())
    yield runner
    runner.close()


def run_example(example: Example, request: pytest.FixtureRequest, cwd: Path) -> Outcome:
    url: str = request.getfixturevalue("docs_server")
    if example.kind == CURL:
        return run_curl(example, url, cwd, example_env(), TIMEOUT)
    runner: Runner = request.getfixturevalue("docs_runner")
    return runner.run(example, url, cwd, TIMEOUT)


def _param(example: Example) -> Any:
    marks = [pytest.mark.skip(reason=f"{example.id}: {example.skip}")] if example.skip else []
    return pytest.param(example, id=example.id, marks=marks)


@pytest.mark.timeout(240)  # the first also starts the server, and each model loads at its first
class TestExamples:
    @pytest.mark.parametrize("example", [_param(example) for example in EXAMPLES])
    def test_example(
        self, example: Example, request: pytest.FixtureRequest, tmp_path: Path
    ) -> None:
        if example.problem is not None:
            pytest.fail(f"{example.id}: {example.problem}", pytrace=False)
        outcome = run_example(example, request, tmp_path)
        if outcome.status != 0:
            pytest.fail(outcome.report(example), pytrace=False)
