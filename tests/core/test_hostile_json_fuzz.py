"""Hostile JSON, keys and values alike, sent to every JSON route of the app
(docs/architecture.md §10): no answer is a 5xx, and every 4xx is a JSON body.

The schema fuzz (tests/conformance/test_schema_fuzz.py) sends what the schema describes and the
mutations schemathesis knows; it never sends what a JSON encoder refuses to write. This one does,
by writing the bytes itself: lone surrogates (in keys too: a key was a 500 on every route), NUL,
nesting past the stored limit and past the parser's recursion limit, integers past 64 bits and
past Python's 4300 digits, `NaN`, `Infinity`, `1e999`, `-0`, long strings. The shapes follow each
route's request schema (its properties, their types and enums, its `model` naming a builtin
model half of the time), so that hostile strings and numbers also reach the handlers behind the
body's validation, not only the 422 at the edge.

The routes come from the app's `/openapi.json`: every operation with a JSON body, and every
POST, PUT and PATCH without one (the edge reads a JSON body whatever the route declares). Path
parameters are one fixed id: a body is checked before the handler looks the id up.

Budget: `EXAMPLES` cases per route, derandomized (`tests.support.fuzzing.budget`), on SQLite,
through the in-process ASGI client (no live server): about 10 s for the ~110 routes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from maestrale.app import create_app
from tests.support import databases
from tests.support.fuzzing import (
    DIRECTIVE,
    ENDLESS,
    auth_headers,
    budget,
    examples,
    fuzz_settings,
)

# Cases per route: 8 in CI's tier, 4 in a plain `make test`; a deeper run away from CI:
# MAESTRALE_HOSTILE_EXAMPLES=200.
EXAMPLES = examples("MAESTRALE_HOSTILE_EXAMPLES", ci_tier=8, plain=4)
MODELS = ["maestrale-echo", "maestrale-embed", "maestrale-echo-moderation"]
WITH_BODY = ("post", "put", "patch")


class Raw(str):
    """A JSON text written as is: what `json.dumps` cannot (or will not) write."""


# -- the hostile values ------------------------------------------------------------------------

SURROGATE = st.integers(0xD800, 0xDFFF).map(chr)
ODD_CHARS = st.sampled_from(["\x00", "\u2028", "\ufeff", "\U0010ffff", "\u202e", "\\", '"'])
SHORT_TEXT = st.lists(st.one_of(st.characters(), SURROGATE, ODD_CHARS), max_size=12).map("".join)
LONG_TEXT = st.tuples(st.integers(10_000, 300_000), SHORT_TEXT).map(lambda t: "x" * t[0] + t[1])
TEXT = st.one_of(SHORT_TEXT, SHORT_TEXT, LONG_TEXT)

BIG_INTS = st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**30, -(10**300)])
NUMBER_TOKENS = st.sampled_from(
    ["1" + "0" * 5000, "NaN", "Infinity", "-Infinity", "1e999", "-1e-999", "-0", "1E400"]
).map(Raw)
NUMBERS = st.one_of(
    st.integers(), BIG_INTS, st.floats(allow_nan=True, allow_infinity=True), NUMBER_TOKENS
)


def _nest(depth: int, opener: str) -> Raw:
    closer = "]" if opener == "[" else "}"
    inner = "[" if opener == "[" else '{"a":'
    return Raw(inner * depth + "1" + closer * depth)


DEEP = st.tuples(st.sampled_from([65, 300, 100_000]), st.sampled_from("[{")).map(
    lambda t: _nest(*t)
)
LEAVES = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT, DEEP)
HOSTILE = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(SHORT_TEXT, inner, max_size=4)
    ),
    max_leaves=10,
)


def dump(value: Any) -> str:
    """`value` as JSON text, lone surrogates escaped, `Raw` pieces as they are."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{dump(str(k))}:{dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v) for v in value) + "]"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**4000:
        return str(value)  # json.dumps refuses ints past Python's digit limit
    return json.dumps(value)  # ensure_ascii: a lone surrogate is written as its escape


# -- shapes from the request schema ------------------------------------------------------------


def _resolve(schema: Any, spec: dict[str, Any]) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = spec["components"]["schemas"].get(name, {})
    return schema


def shaped(schema: Any, spec: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of roughly `schema`'s shape, every leaf hostile, or a hostile value outright."""
    schema = _resolve(schema, spec)
    if depth > 4 or not isinstance(schema, dict):
        return HOSTILE
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    branches = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
    if branches:
        return st.one_of([shaped(b, spec, depth + 1) for b in branches])
    kind = schema.get("type")
    if kind == "string":
        return TEXT
    if kind in ("integer", "number"):
        return NUMBERS
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(shaped(schema.get("items", {}), spec, depth + 1), max_size=3)
    if kind == "object" or "properties" in schema:
        return shaped_object(schema, spec, depth)
    return HOSTILE


def shaped_object(
    schema: dict[str, Any], spec: dict[str, Any], depth: int
) -> st.SearchStrategy[dict[str, Any]]:
    """The object's required properties, some of its others, and hostile keys of its own."""
    properties: dict[str, Any] = schema.get("properties", {})
    required = [name for name in schema.get("required", []) if name in properties]
    optional = [name for name in properties if name not in required]

    def value_of(name: str) -> st.SearchStrategy[Any]:
        if name == "model":
            return st.one_of(st.sampled_from(MODELS), TEXT)
        return shaped(properties[name], spec, depth + 1)

    fixed = {name: value_of(name) for name in required}
    extra = {name: value_of(name) for name in optional}
    return st.builds(
        lambda known, hostile: {**hostile, **known},
        st.fixed_dictionaries(fixed, optional=extra),
        st.dictionaries(SHORT_TEXT, HOSTILE, max_size=2),
    )


def body_strategy(operation: dict[str, Any], spec: dict[str, Any]) -> st.SearchStrategy[Any]:
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema", {})
    return st.one_of(shaped(schema, spec), shaped(schema, spec), shaped(schema, spec), HOSTILE)


# -- the routes --------------------------------------------------------------------------------


def json_routes(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, operation) of every route that takes JSON, or could be sent some."""
    found = []
    for path, operations in spec["paths"].items():
        if path in ENDLESS:
            continue
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content")
            takes_json = content is not None and "application/json" in content
            if takes_json or (content is None and method in WITH_BODY):
                found.append((method, path, operation))
    return found


SPEC = create_app(fuzz_settings("sqlite+aiosqlite://", Path("unused"))).openapi()
ROUTES = json_routes(SPEC)
# An id of no resource: the body is checked first, then the handler answers 404.
PATH_ID = "hostile-0000"


@pytest.fixture(scope="module")
def hostile_client(
    tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path, temporal_address: str
) -> Iterator[TestClient]:
    """The app on a copy of the migrated SQLite template and the session's Temporal (without
    one, every workflows route is a 503 before it reads its body)."""
    directory = tmp_path_factory.mktemp("hostile")
    database = databases.copy_sqlite(sqlite_template, directory)
    app: FastAPI = create_app(fuzz_settings(database, directory / "data", temporal_address))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def test_every_json_route_is_found() -> None:
    """The discovery itself: the routes that kept hostile JSON (the issue's ten) are all in."""
    paths = {path for _, path, _ in ROUTES}
    assert {
        "/v1/chat/completions",
        "/v1/embeddings",
        "/v1/agents",
        "/v1/conversations",
        "/v1/moderations",
        "/v1/observability/datasets",
        "/v1/admin/workspaces",
    } <= paths
    assert len(ROUTES) > 80


@pytest.mark.parametrize(
    ("method", "path", "operation"), ROUTES, ids=[f"{m.upper()} {p}" for m, p, _ in ROUTES]
)
@budget(EXAMPLES, shrink=False)
@given(data=st.data())
def test_hostile_json_is_never_a_server_error(
    method: str,
    path: str,
    operation: dict[str, Any],
    data: st.DataObject,
    hostile_client: TestClient,
) -> None:
    text = dump(data.draw(body_strategy(operation, SPEC), label="body"))
    if DIRECTIVE.search(text):
        return  # the builtin engine's sleep and failure directives, 5xx on purpose
    url = path
    for parameter in operation.get("parameters", []):
        if parameter.get("in") == "path":
            url = url.replace("{" + parameter["name"] + "}", PATH_ID)
    headers = {**auth_headers(path), "content-type": "application/json"}
    response = hostile_client.request(method.upper(), url, content=text, headers=headers)
    shown = text[:300]
    assert response.status_code < 500, (method, path, response.status_code, response.text, shown)
    if response.status_code >= 400:
        assert response.headers["content-type"].startswith("application/json"), shown
        response.json()
