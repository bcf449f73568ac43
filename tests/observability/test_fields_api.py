"""Chat completion fields: definitions and groups, options for an operator, option counts."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from tests.observability.events_seed import make_event, obs_error, seed_events
from tests.support.app_fixtures import TenantKey, make_client

FIELDS = "/v1/observability/chat-completion-fields"

# The options of extra_fields keys: JSON operators that differ between the backends.
pytestmark = pytest.mark.both_databases("maestrale.observability.events.repository")


@pytest.fixture
async def seeded(app: FastAPI, client: httpx.AsyncClient, other: TenantKey) -> TenantKey:
    await seed_events(app, client)
    async with make_client(app, other.key) as foreign:
        await make_event(foreign, "corr-X", "foreign", {"team": "green", "secret": "s"})
    await app.state.services.recorder.flush()
    return other


async def test_field_definitions_and_groups(seeded: TenantKey, client: httpx.AsyncClient) -> None:
    resp = await client.get(FIELDS)
    assert resp.status_code == 200
    body = resp.json()
    groups = {g["name"] for g in body["field_groups"]}
    by_name = {f["name"]: f for f in body["field_definitions"]}
    assert {f["group"] for f in by_name.values()} <= groups
    assert by_name["created_at"]["type"] == "TIMESTAMP"
    assert (
        by_name["model"]["type"] == "ENUM" and "includes" in by_name["model"]["supported_operators"]
    )
    assert by_name["latency_ms"]["supported_operators"] == ["lt", "lte", "gt", "gte"]
    assert by_name["request_messages"]["supported_operators"] == ["len_eq"]
    assert by_name["extra_fields.team"]["type"] == "TEXT"
    assert "icontains" in by_name["extra_fields.team"]["supported_operators"]
    assert by_name["extra_fields.flag"]["type"] == "BOOL"
    assert by_name["extra_fields.tags"] == {
        "name": "extra_fields.tags",
        "label": "tags",
        "type": "ARRAY",
        "supported_operators": ["len_eq", "isnull"],
        "group": "extra_fields",
    }
    # score holds an int and a float: every operator of an extra key is offered.
    assert "gt" in by_name["extra_fields.score"]["supported_operators"]
    # Keys of another workspace's events are not listed.
    assert "extra_fields.secret" not in by_name


async def test_field_options(seeded: TenantKey, client: httpx.AsyncClient) -> None:
    resp = await client.get(f"{FIELDS}/extra_fields.team/options", params={"operator": "eq"})
    assert resp.status_code == 200
    assert sorted(resp.json()["options"]) == ["Red", "blue", "red"]
    resp = await client.get(f"{FIELDS}/model/options", params={"operator": "includes"})
    assert resp.json() == {"options": ["maestrale-echo"]}
    resp = await client.get(f"{FIELDS}/extra_fields.team/options", params={"operator": "isnull"})
    assert resp.json() == {"options": [True, False]}
    obs_error(
        await client.get(f"{FIELDS}/nope/options", params={"operator": "eq"}),
        404,
        "FIELDS_NOT_FOUND",
    )
    message = obs_error(
        await client.get(f"{FIELDS}/nb_messages/options", params={"operator": "eq"}),
        400,
        "FIELDS_BAD_REQUEST",
    )
    assert "nb_messages" in message
    message = obs_error(
        await client.get(f"{FIELDS}/source/options", params={"operator": "gt"}),
        400,
        "FIELDS_BAD_REQUEST",
    )
    assert "'gt'" in message
    obs_error(await client.get(f"{FIELDS}/model/options"), 422, "VALIDATION_ERROR")


async def test_field_option_counts(seeded: TenantKey, client: httpx.AsyncClient) -> None:
    url = f"{FIELDS}/extra_fields.team/options-counts"
    resp = await client.post(url, json={})
    assert resp.status_code == 200
    assert sorted((c["value"], c["count"]) for c in resp.json()["counts"]) == [
        ("Red", 1),
        ("blue", 1),
        ("red", 1),
    ]
    flt = {"filters": {"field": "extra_fields.team", "op": "icontains", "value": "red"}}
    resp = await client.post(url, json={"filter_params": flt})
    assert sorted(c["value"] for c in resp.json()["counts"]) == ["Red", "red"]
    resp = await client.post(f"{FIELDS}/model/options-counts", json={"filter_params": None})
    assert resp.json() == {"counts": [{"value": "maestrale-echo", "count": 3}]}
    bad = {"filters": {"field": "nope", "op": "eq", "value": 1}}
    obs_error(await client.post(url, json={"filter_params": bad}), 400, "SEARCH_BAD_REQUEST")
    obs_error(
        await client.post(f"{FIELDS}/latency_ms/options-counts", json={}),
        400,
        "FIELDS_BAD_REQUEST",
    )
