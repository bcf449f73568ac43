"""Schema fuzzing of `/openapi.json` (docs/architecture.md §10): schemathesis generates requests for
every documented operation, valid and invalid, and a test fails on any 5xx and on any response that
the schema does not declare (its status code, content type, headers or body).

The app runs in process, driven through schemathesis' ASGI transport, which runs the app's
lifespan on its own event loop thread; requests carry the bootstrap keys: the standard key
(`Authorization: Bearer`) everywhere, the admin key (`x-api-key`) on `/v1/admin/...`. One
resource of each kind is made first (`fuzz_seeds`); `test_schema_fuzz_seeded` names them in the
path of every operation on one resource, so that requests reach the handlers behind the ids, not
only their 404s. The database is a copy of the migrated SQLite template: the fuzz runs on SQLite
only, to keep CI time (MAESTRALE_FUZZ_BACKEND=postgres runs it on MAESTRALE_TEST_POSTGRES_URL).

Budget: `MAX_EXAMPLES` cases per operation (requests that fit the schema and requests that break
it), no deadline, derandomized (Hypothesis' seed is fixed by the test), so that CI sends the
same requests on every run (CI 12 a test, a plain `make test` 4).

Four operations are left out: the workflow event and log streams (`/v1/workflows/events/stream`,
`/v1/workflows/executions/{execution_id}/stream`, `.../logs/stream` of an execution and of a
deployment) follow events for as long as the client stays (tests/workflows/test_events_stream_api.py
and test_telemetry_api.py cover them); every other stream ends with its answer,
and uploads are generated as multipart bodies. The workflows group runs on the session's Temporal
dev server with a plain temporalio worker serving the seeded workflows, and waits of at most 1 s
for an execution. Generated bodies that name a
builtin engine directive that sleeps or fails on purpose are not sent (`DIRECTIVE`). The realtime
transcription WebSocket is no OpenAPI operation: tests/audio/test_realtime_api.py covers it.

Each operation is a test of its own (pytest parametrization, schemathesis' strategies): the
`schema.parametrize()` items of schemathesis 4.32 share one node id under pytest 9.2.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import given
from hypothesis import strategies as st
from schemathesis import APIOperation, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from maestrale.app import create_app
from tests.conformance.fuzz_seeds import WORKFLOW_DEPLOYMENT, seed
from tests.support import databases
from tests.support.fuzzing import (
    DIRECTIVE,
    ENDLESS,
    auth_headers,
    budget,
    examples,
    fuzz_settings,
)
from tests.support.mcp_servers import serve_mcp
from tests.workflows.plain_worker import worker_thread

Operation = APIOperation[Any, Any, Any, Any]

# Generated cases per operation and mode: 12 in CI's tier, 4 in a plain `make test`; a deeper run
# away from CI: MAESTRALE_FUZZ_EXAMPLES=500.
MAX_EXAMPLES = examples("MAESTRALE_FUZZ_EXAMPLES", ci_tier=12, plain=4)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

# Half of the `model` fields name a cheap builtin model, so that requests reach the engines (the
# others name no model: 404). No local model is named: loading one takes seconds.
GENERATION: dict[str, Any] = {
    "dictionaries": {
        "models": {"values": ["maestrale-echo", "maestrale-embed", "maestrale-echo-moderation"]}
    },
    "parameters": {"body.model": {"dictionary": "models", "probability": 0.5}},
}


# The schema is the app's own `/openapi.json`, built without starting an app (collection needs
# the operations); the requests go to the module's app.
schema = schemathesis.openapi.from_dict(
    create_app(fuzz_settings("sqlite+aiosqlite://", Path("unused"))).openapi(),
    config=schemathesis.Config.from_dict(GENERATION),
)
OPERATIONS: list[Operation] = [
    op for op in (result.ok() for result in schema.get_all_operations()) if op.path not in ENDLESS
]
# The operations on one resource, but for its deletion: the operations after it would find none.
SEEDED = [
    op
    for op in OPERATIONS
    if "{" in op.path and not (op.method.upper() == "DELETE" and op.path.endswith("}"))
]


@pytest.fixture(scope="module")
async def fuzz_database(
    tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path
) -> AsyncIterator[str]:
    if os.environ.get("MAESTRALE_FUZZ_BACKEND") == "postgres":
        url = await databases.create_postgres_database()
        yield url
        await databases.drop_postgres_database(url)
    else:
        yield databases.copy_sqlite(sqlite_template, tmp_path_factory.mktemp("fuzz"))


@pytest.fixture(scope="module")
def fuzzed_app(
    fuzz_database: str, tmp_path_factory: pytest.TempPathFactory, temporal_address: str
) -> Iterator[FastAPI]:
    data_dir = tmp_path_factory.mktemp("fuzz") / "data"
    app = create_app(fuzz_settings(fuzz_database, data_dir, temporal_address))
    with asgi.get_client(app) as client:  # the worker serves the workspace's namespace
        whoami = client.get("/v1/workflows/workers/whoami", headers=auth_headers("/v1/"))
    with worker_thread(temporal_address, whoami.json()["namespace"], WORKFLOW_DEPLOYMENT):
        yield app
        # Schemathesis started the lifespan on its own loop, at the first request; stop it there.
        asgi.shutdown_lifespans()


@pytest.fixture(scope="module")
def fuzz_mcp() -> Iterator[str]:
    """The MCP server of the seeded connector."""
    with serve_mcp("streamable-http") as (url, _):
        yield url


@pytest.fixture(scope="module")
def seeds(fuzzed_app: FastAPI, fuzz_mcp: str) -> dict[str, str]:
    with asgi.get_client(fuzzed_app) as client:
        return seed(client, fuzz_mcp)


SETTINGS = budget(MAX_EXAMPLES)


def _cases(operation: Operation) -> st.SearchStrategy[schemathesis.Case[Any]]:
    """Requests that fit the operation's schema and requests that break it (a 4xx is due)."""
    return st.one_of(
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
    )


def _call(case: schemathesis.Case[Any], app: FastAPI) -> None:
    hypothesis.assume(not DIRECTIVE.search(json.dumps(case.body, default=str)))
    case.call_and_validate(app=app, headers=auth_headers(case.path), checks=CHECKS)


@pytest.mark.parametrize("operation", SEEDED, ids=lambda op: op.label)
@SETTINGS
@given(data=st.data())
def test_schema_fuzz_seeded(
    operation: Operation, data: st.DataObject, fuzzed_app: FastAPI, seeds: dict[str, str]
) -> None:
    """The operations on one resource, on the seeded one."""
    case = data.draw(_cases(operation), label="case")
    for name in list(case.path_parameters or {}):
        if name in seeds:
            case.path_parameters[name] = seeds[name]
    _call(case, fuzzed_app)


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.label)
@SETTINGS
@given(data=st.data())
def test_schema_fuzz(
    operation: Operation, data: st.DataObject, fuzzed_app: FastAPI, seeds: dict[str, str]
) -> None:
    """Every operation, with generated ids (the seeds are made first all the same, so that the
    run starts from the same database whichever test runs first)."""
    _call(data.draw(_cases(operation), label="case"), fuzzed_app)
