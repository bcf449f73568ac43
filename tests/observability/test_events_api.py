"""Chat completion events: get one, search (every operator, AND/OR groups, cursor pages),
search-ids, and the group's error body."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.observability.events_seed import make_event, obs_error, seed_events
from tests.support.app_fixtures import TenantKey, create_tenant, make_client

pytestmark = pytest.mark.both_databases("maestrale.observability.events.repository")

SEARCH = "/v1/observability/chat-completion-events/search"
IDS = "/v1/observability/chat-completion-events/search-ids"


def cond(field: str, op: str, value: Any) -> dict[str, Any]:
    return {"field": field, "op": op, "value": value}


async def search(client: httpx.AsyncClient, filters: Any, **params: Any) -> httpx.Response:
    return await client.post(SEARCH, json={"search_params": {"filters": filters}}, params=params)


async def correlations(client: httpx.AsyncClient, filters: Any) -> set[str]:
    resp = await search(client, filters)
    assert resp.status_code == 200, resp.text
    return {e["correlation_id"] for e in resp.json()["completion_events"]["results"]}


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> str:
    """Module scope: one app per backend for the module (below)."""
    return str(request.param)


@pytest.fixture(scope="module")
def app(shared_app: FastAPI) -> FastAPI:
    """Every test here only reads (or is refused, writing nothing): the module's tests share one
    app, whose events are seeded once."""
    return shared_app


@pytest.fixture(scope="module")
async def seeded(app: FastAPI) -> TenantKey:
    other = await create_tenant(app.state.services.db)
    async with make_client(app) as client:
        await seed_events(app, client)
    async with make_client(app, other.key) as foreign:
        await make_event(foreign, "corr-A9", "foreign", {"team": "red", "score": 9})
    await app.state.services.recorder.flush()
    return other


ALL = {"corr-A1", "corr-B2", "CORR-c3"}

CASES: list[tuple[dict[str, Any], set[str]]] = [
    (cond("correlation_id", "eq", "corr-A1"), {"corr-A1"}),
    (cond("correlation_id", "neq", "corr-A1"), {"corr-B2", "CORR-c3"}),
    (cond("correlation_id", "startswith", "corr-"), {"corr-A1", "corr-B2"}),
    (cond("correlation_id", "istartswith", "corr-"), ALL),
    (cond("correlation_id", "endswith", "B2"), {"corr-B2"}),
    (cond("correlation_id", "iendswith", "C3"), {"CORR-c3"}),
    (cond("correlation_id", "contains", "rr-B"), {"corr-B2"}),
    (cond("correlation_id", "icontains", "RR-b"), {"corr-B2"}),
    (cond("correlation_id", "notcontains", "-A"), {"corr-B2", "CORR-c3"}),
    (cond("correlation_id", "inotcontains", "-a"), {"corr-B2", "CORR-c3"}),
    (cond("correlation_id", "contains", "%"), set()),
    (cond("correlation_id", "matches", "^corr-[AB][0-9]$"), {"corr-A1", "corr-B2"}),
    (cond("correlation_id", "includes", ["corr-A1", "CORR-c3"]), {"corr-A1", "CORR-c3"}),
    (cond("correlation_id", "excludes", ["corr-A1"]), {"corr-B2", "CORR-c3"}),
    (cond("model", "eq", "maestrale-echo"), ALL),
    (cond("status_code", "eq", 200), ALL),
    (cond("status_code", "includes", [404]), set()),
    (cond("nb_input_tokens", "gt", 0), ALL),
    (cond("nb_output_tokens", "lt", 0), set()),
    (cond("nb_messages", "gte", 2), ALL),
    (cond("nb_messages", "lte", 1), set()),
    (cond("latency_ms", "gte", 0), ALL),
    (cond("created_at", "gte", "2000-01-01T00:00:00Z"), ALL),
    (cond("created_at", "lt", "2000-01-01T00:00:00"), set()),
    (cond("request_messages", "len_eq", 1), ALL),
    (cond("response_messages", "len_eq", 0), set()),
    (cond("enabled_tools", "len_eq", 0), ALL),
    (cond("extra_fields.team", "eq", "red"), {"corr-A1"}),
    (cond("extra_fields.team", "neq", "red"), {"corr-B2", "CORR-c3"}),
    (cond("extra_fields.team", "icontains", "RED"), {"corr-A1", "CORR-c3"}),
    (cond("extra_fields.team", "includes", ["blue", "Red"]), {"corr-B2", "CORR-c3"}),
    (cond("extra_fields.team", "excludes", ["blue"]), {"corr-A1", "CORR-c3"}),
    (cond("extra_fields.score", "gt", 3), {"corr-A1"}),
    (cond("extra_fields.score", "lte", 2.5), {"corr-B2"}),
    (cond("extra_fields.score", "eq", 5), {"corr-A1"}),
    (cond("extra_fields.score", "neq", 5), {"corr-B2", "CORR-c3"}),
    (cond("extra_fields.score", "isnull", False), {"corr-A1", "corr-B2"}),
    (cond("extra_fields.score", "isnull", True), {"CORR-c3"}),
    (cond("extra_fields.flag", "eq", True), {"corr-A1"}),
    (cond("extra_fields.flag", "eq", False), set()),
    (cond("extra_fields.tags", "len_eq", 2), {"corr-A1"}),
    (cond("extra_fields.endpoint", "eq", "chat"), ALL),
    (cond("extra_fields.team", "matches", "^[Rr]e"), {"corr-A1", "CORR-c3"}),
    (cond("extra_fields.team", "startswith", "R"), {"CORR-c3"}),
    (
        {
            "AND": [
                cond("extra_fields.team", "icontains", "red"),
                {"OR": [cond("extra_fields.score", "gt", 1), cond("correlation_id", "eq", "x")]},
            ]
        },
        {"corr-A1"},
    ),
    (
        {"OR": [cond("correlation_id", "eq", "corr-B2"), cond("extra_fields.flag", "eq", True)]},
        {"corr-A1", "corr-B2"},
    ),
    ({"AND": [], "OR": []}, ALL),
]


@pytest.mark.parametrize(("filters", "expected"), CASES)
async def test_search_operators(
    seeded: TenantKey, client: httpx.AsyncClient, filters: dict[str, Any], expected: set[str]
) -> None:
    assert await correlations(client, filters) == expected


async def test_search_pages_with_cursor_newest_first(
    seeded: TenantKey, client: httpx.AsyncClient
) -> None:
    resp = await search(client, None, page_size=2)
    assert resp.status_code == 200
    feed = resp.json()["completion_events"]
    assert [e["correlation_id"] for e in feed["results"]] == ["CORR-c3", "corr-B2"]
    first = feed["results"][0]
    assert set(first) == {
        "event_id",
        "correlation_id",
        "created_at",
        "extra_fields",
        "nb_input_tokens",
        "nb_output_tokens",
    }
    assert first["extra_fields"]["team"] == "Red"
    assert feed["cursor"]
    resp = await search(client, None, page_size=2, cursor=feed["cursor"])
    feed = resp.json()["completion_events"]
    assert [e["correlation_id"] for e in feed["results"]] == ["corr-A1"]
    assert feed["cursor"] is None
    # created_at compares as a time: from the second event on, two events.
    oldest = feed["results"][0]["created_at"]
    resp = await search(client, None)
    times = sorted(e["created_at"] for e in resp.json()["completion_events"]["results"])
    assert times[0] == oldest
    assert await correlations(client, cond("created_at", "gte", times[1])) == {
        "corr-B2",
        "CORR-c3",
    }
    assert await correlations(client, cond("created_at", "lt", times[1])) == {"corr-A1"}
    assert await correlations(client, cond("created_at", "gt", times[2])) == set()
    # extra_fields selects the keys returned.
    resp = await client.post(
        SEARCH, json={"search_params": {"filters": None}, "extra_fields": ["score"]}
    )
    assert {tuple(e["extra_fields"]) for e in resp.json()["completion_events"]["results"]} == {
        ("score",),
        (),
    }


async def test_get_event_and_isolation(
    seeded: TenantKey, app: FastAPI, client: httpx.AsyncClient
) -> None:
    resp = await search(client, cond("correlation_id", "eq", "corr-A1"))
    event_id = resp.json()["completion_events"]["results"][0]["event_id"]
    resp = await client.get(f"/v1/observability/chat-completion-events/{event_id}")
    assert resp.status_code == 200
    event = resp.json()
    assert event["event_id"] == event_id
    assert event["request_messages"] == [{"role": "user", "content": "alpha one"}]
    assert event["response_messages"][0]["content"] == "echo: alpha one"
    assert event["nb_messages"] == 2 and event["enabled_tools"] == []
    assert event["chat_transcription_events"] == []
    assert event["extra_fields"]["tags"] == ["a", "b"]
    async with make_client(app, seeded.key) as foreign:
        obs_error(
            await foreign.get(f"/v1/observability/chat-completion-events/{event_id}"),
            404,
            "SEARCH_NOT_FOUND",
        )
        resp = await search(foreign, None)
        assert [e["correlation_id"] for e in resp.json()["completion_events"]["results"]] == [
            "corr-A9"
        ]
    # The other workspace's event never matches here.
    assert await correlations(client, cond("extra_fields.score", "eq", 9)) == set()


async def test_search_ids_streams_every_matching_id(
    seeded: TenantKey, app: FastAPI, client: httpx.AsyncClient
) -> None:
    resp = await client.post(IDS, json={"search_params": {"filters": None}})
    assert resp.status_code == 200
    ids = resp.json()["completion_event_ids"]
    assert len(ids) == 3 == len(set(ids))
    resp = await client.post(
        IDS, json={"search_params": {"filters": cond("extra_fields.team", "eq", "blue")}}
    )
    assert len(resp.json()["completion_event_ids"]) == 1
    resp = await client.post(
        IDS, json={"search_params": {"filters": cond("extra_fields.team", "eq", "nobody")}}
    )
    assert resp.json() == {"completion_event_ids": []}
    obs_error(
        await client.post(IDS, json={"search_params": {"filters": cond("nope", "eq", 1)}}),
        400,
        "SEARCH_BAD_REQUEST",
    )


BAD: list[tuple[Any, str]] = [
    (cond("nope", "eq", 1), "'nope'"),
    (cond("extra_fields.a b", "eq", 1), "extra_fields.a b"),
    (cond("latency_ms", "contains", "x"), "does not support operator 'contains'"),
    (cond("model", "like", "x"), "unknown operator 'like'"),
    (cond("nb_messages", "gt", "many"), "takes a number"),
    (cond("nb_messages", "eq", True), "takes a number"),
    (cond("status_code", "eq", 2.5), "integer"),
    (cond("created_at", "gt", "yesterday"), "ISO 8601"),
    (cond("correlation_id", "includes", "x"), "array"),
    (cond("correlation_id", "matches", "(unclosed"), "regular expression"),
    (cond("request_messages", "len_eq", -1), "non-negative"),
    (cond("extra_fields.score", "isnull", "yes"), "true or false"),
    (cond("extra_fields.flag", "gt", True), "boolean"),
    (cond("extra_fields.team", "includes", ["a", 1]), "strings or of numbers"),
    ({"field": "model"}, "condition needs"),
    ({"AND": "x"}, "AND must be an array"),
    ({"NOT": []}, "unknown keys"),
    ({"AND": [1]}, "must be an object"),
]


@pytest.mark.parametrize(("filters", "needle"), BAD)
async def test_bad_filters_are_400_naming_them(
    client: httpx.AsyncClient, filters: Any, needle: str
) -> None:
    message = obs_error(await search(client, filters), 400, "SEARCH_BAD_REQUEST")
    assert needle in message


async def test_group_error_shapes(
    client: httpx.AsyncClient, anon_client: httpx.AsyncClient
) -> None:
    deep: dict[str, Any] = cond("model", "eq", "x")
    for _ in range(12):
        deep = {"AND": [deep]}
    assert "deeper" in obs_error(await search(client, deep), 400, "SEARCH_BAD_REQUEST")
    message = obs_error(await client.post(SEARCH, json={}), 422, "VALIDATION_ERROR")
    assert "search_params" in message
    obs_error(
        await client.post(SEARCH, content=b"{", headers={"content-type": "application/json"}),
        422,
        "VALIDATION_ERROR",
    )
    obs_error(await search(client, None, page_size=0), 400, "VALIDATION_ERROR")
    obs_error(await search(client, None, cursor="!!"), 400, "VALIDATION_ERROR")
    obs_error(await search(anon_client, None), 401, "AUTH_UNAUTHORIZED")
    obs_error(
        await client.get("/v1/observability/chat-completion-events/missing"),
        404,
        "SEARCH_NOT_FOUND",
    )
    obs_error(await client.get("/v1/observability/no-such-thing"), 404, "UNKNOWN_ERROR")
    obs_error(await client.delete("/v1/observability/chat-completion-fields"), 405, "UNKNOWN_ERROR")
    # Other groups keep the common shape.
    resp = await client.get("/v1/files/missing")
    assert resp.status_code == 404 and resp.json()["object"] == "error"
    resp = await client.get("/v1/no-such-group")
    assert resp.status_code == 404 and resp.json()["code"] == "route_not_found"
    resp = await client.post("/v1/chat/completions", json={})
    assert resp.status_code == 422 and isinstance(resp.json()["detail"], list)
