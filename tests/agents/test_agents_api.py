"""The /v1/agents group over HTTP, on every database backend."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.support.app_fixtures import TenantKey, make_client

pytestmark = pytest.mark.both_databases("maestrale.agents.repository")

AGENT_KEYS = {
    "model",
    "name",
    "id",
    "version",
    "versions",
    "created_at",
    "updated_at",
    "deployment_chat",
    "source",
    "instructions",
    "tools",
    "completion_args",
    "guardrails",
    "description",
    "handoffs",
    "metadata",
    "object",
    "version_message",
    # This server's extension: the agent's stored prompt and skills (null without).
    "prompt",
    "skills",
}

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


async def create(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    body = {"model": "maestrale-echo", "name": "helper", **fields}
    response = await client.post("/v1/agents", json=body)
    assert response.status_code == 200, response.text
    agent: dict[str, Any] = response.json()
    return agent


async def test_create_returns_every_field(client: httpx.AsyncClient) -> None:
    agent = await create(
        client,
        instructions="Be brief.",
        tools=[WEATHER],
        completion_args={"temperature": 0.2, "max_tokens": 50},
        description="helps",
        metadata={"team": "a"},
        version_message="first",
        unknown_field="ignored",
    )
    assert set(agent) == AGENT_KEYS
    assert agent["id"].startswith("ag_")
    assert agent["object"] == "agent"
    assert agent["version"] == 1 and agent["versions"] == [1]
    assert agent["source"] == "api" and agent["deployment_chat"] is False
    assert agent["tools"] == [WEATHER]
    assert agent["completion_args"] == {"temperature": 0.2, "max_tokens": 50}
    assert agent["metadata"] == {"team": "a"}
    assert agent["version_message"] == "first"
    assert agent["guardrails"] is None and agent["handoffs"] is None

    plain = await create(client)
    assert plain["instructions"] is None and plain["tools"] == []
    assert plain["completion_args"] == {} and plain["metadata"] is None


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"model": "no-such-model", "name": "x"}, 404, "model_not_found"),
        (
            {"model": "maestrale-echo", "name": "x", "handoffs": ["ag_missing"]},
            400,
            "invalid_handoff",
        ),
        ({"model": "maestrale-echo"}, 422, None),
        ({"model": "maestrale-echo", "name": "x", "tools": [{"type": "function"}]}, 422, None),
        ({"model": "maestrale-echo", "name": "x", "tools": [{"type": "teleport"}]}, 422, None),
        (
            {"model": "maestrale-echo", "name": "x", "completion_args": {"temperature": 9}},
            422,
            None,
        ),
    ],
)
async def test_create_rejects_bad_input(
    client: httpx.AsyncClient, body: dict[str, Any], status: int, code: str | None
) -> None:
    response = await client.post("/v1/agents", json=body)
    assert response.status_code == status, response.text
    if code is not None:
        assert response.json()["code"] == code
    assert (await client.get("/v1/agents")).json() == []


async def test_update_makes_versions_and_switch_selects_one(client: httpx.AsyncClient) -> None:
    agent = await create(client, instructions="v1", metadata={"k": "1"})
    agent_id = agent["id"]
    response = await client.patch(
        f"/v1/agents/{agent_id}", json={"instructions": "v2", "version_message": "second"}
    )
    assert response.status_code == 200, response.text
    v2 = response.json()
    assert v2["version"] == 2 and v2["versions"] == [1, 2]
    assert v2["instructions"] == "v2" and v2["metadata"] == {"k": "1"}  # unchanged fields kept
    assert v2["version_message"] == "second" and v2["name"] == "helper"
    v3 = (await client.patch(f"/v1/agents/{agent_id}", json={"description": None})).json()
    assert v3["version"] == 3 and v3["instructions"] == "v2" and v3["version_message"] is None

    current = (await client.get(f"/v1/agents/{agent_id}")).json()
    assert current["version"] == 3
    switched = await client.patch(f"/v1/agents/{agent_id}/version", params={"version": 1})
    assert switched.status_code == 200
    assert switched.json()["version"] == 1 and switched.json()["instructions"] == "v1"
    assert (await client.get(f"/v1/agents/{agent_id}")).json()["version"] == 1
    # An update after a switch builds on the selected version and still grows `versions`.
    v4 = (await client.patch(f"/v1/agents/{agent_id}", json={"name": "renamed"})).json()
    assert v4["version"] == 4 and v4["instructions"] == "v1" and v4["versions"] == [1, 2, 3, 4]

    missing = await client.patch(f"/v1/agents/{agent_id}/version", params={"version": 9})
    assert missing.status_code == 404 and missing.json()["code"] == "agent_version_not_found"
    bad_model = await client.patch(f"/v1/agents/{agent_id}", json={"model": "nope"})
    assert bad_model.status_code == 404
    assert (await client.get(f"/v1/agents/{agent_id}")).json()["version"] == 4


async def test_a_large_float_in_stored_json_survives_an_update(client: httpx.AsyncClient) -> None:
    """Found by the schema fuzzer (issue 14): Postgres keeps 1e20 as the numeric
    100000000000000000000, read back as an integer past 64 bits that the next write (a new
    version copies the current one) could not encode: a 500."""
    agent = await create(client, metadata={"big": 1e20, "list": [-1e25]})
    updated = await client.patch(f"/v1/agents/{agent['id']}", json={"name": "renamed"})
    assert updated.status_code == 200, updated.text
    body = updated.json()
    assert body["version"] == 2 and body["metadata"] == {"big": 1e20, "list": [-1e25]}
    assert isinstance(body["metadata"]["big"], float)


async def test_versions_list_and_get(client: httpx.AsyncClient) -> None:
    agent_id = (await create(client, instructions="v1"))["id"]
    for n in (2, 3):
        await client.patch(f"/v1/agents/{agent_id}", json={"instructions": f"v{n}"})
    versions = (await client.get(f"/v1/agents/{agent_id}/versions")).json()
    assert [v["version"] for v in versions] == [1, 2, 3]
    assert [v["instructions"] for v in versions] == ["v1", "v2", "v3"]
    assert all(v["versions"] == [1, 2, 3] for v in versions)
    page = await client.get(f"/v1/agents/{agent_id}/versions", params={"page": 1, "page_size": 2})
    assert [v["version"] for v in page.json()] == [3]
    one = (await client.get(f"/v1/agents/{agent_id}/versions/2")).json()
    assert one["version"] == 2 and one["instructions"] == "v2"
    assert (await client.get(f"/v1/agents/{agent_id}/versions/7")).status_code == 404
    assert (await client.get(f"/v1/agents/{agent_id}/versions/abc")).status_code == 400
    for huge in ("99999999999999999999", "-5", "0"):
        assert (await client.get(f"/v1/agents/{agent_id}/versions/{huge}")).status_code == 404
        got = await client.get(f"/v1/agents/{agent_id}", params={"agent_version": huge})
        assert got.status_code == 404
    switch = await client.patch(f"/v1/agents/{agent_id}/version", params={"version": 2**40})
    assert switch.status_code == 404
    alias = await client.put(
        f"/v1/agents/{agent_id}/aliases", params={"alias": "big", "version": 2**40}
    )
    assert alias.status_code == 404
    by_number = (await client.get(f"/v1/agents/{agent_id}", params={"agent_version": 1})).json()
    assert by_number["instructions"] == "v1"


async def test_aliases(client: httpx.AsyncClient) -> None:
    agent_id = (await create(client, instructions="v1"))["id"]
    await client.patch(f"/v1/agents/{agent_id}", json={"instructions": "v2"})
    url = f"/v1/agents/{agent_id}/aliases"
    created = await client.put(url, params={"alias": "prod", "version": 1})
    assert created.status_code == 200, created.text
    assert set(created.json()) == {"alias", "version", "created_at", "updated_at"}
    assert created.json()["version"] == 1
    got = (await client.get(f"/v1/agents/{agent_id}", params={"agent_version": "prod"})).json()
    assert got["version"] == 1 and got["instructions"] == "v1"

    moved = (await client.put(url, params={"alias": "prod", "version": 2})).json()
    assert moved["version"] == 2 and moved["created_at"] == created.json()["created_at"]
    await client.put(url, params={"alias": "canary", "version": 2})
    aliases = (await client.get(url)).json()
    assert [(a["alias"], a["version"]) for a in aliases] == [("canary", 2), ("prod", 2)]
    got = (await client.get(f"/v1/agents/{agent_id}", params={"agent_version": "prod"})).json()
    assert got["instructions"] == "v2"

    missing_version = await client.put(url, params={"alias": "x", "version": 5})
    assert missing_version.status_code == 404
    assert missing_version.json()["code"] == "agent_version_not_found"
    numeric = await client.put(url, params={"alias": "12", "version": 1})
    assert numeric.status_code == 400 and numeric.json()["code"] == "invalid_alias"
    unknown = await client.get(f"/v1/agents/{agent_id}", params={"agent_version": "nope"})
    assert unknown.status_code == 404 and unknown.json()["code"] == "agent_alias_not_found"

    assert (await client.delete(url, params={"alias": "canary"})).status_code == 204
    assert [a["alias"] for a in (await client.get(url)).json()] == ["prod"]
    assert (await client.delete(url, params={"alias": "canary"})).status_code == 404


async def test_handoffs_must_name_agents_of_the_workspace(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    target = await create(client, name="target")
    source = await create(client, name="source", handoffs=[target["id"]])
    assert source["handoffs"] == [target["id"]]
    async with make_client(app, other.key) as foreign:
        response = await foreign.post(
            "/v1/agents", json={"model": "maestrale-echo", "name": "x", "handoffs": [target["id"]]}
        )
        assert response.status_code == 400 and response.json()["code"] == "invalid_handoff"
    bad = await client.patch(f"/v1/agents/{source['id']}", json={"handoffs": ["ag_nope"]})
    assert bad.status_code == 400


async def test_deprecated_list_and_filters(client: httpx.AsyncClient) -> None:
    first = await create(client, name="alpha", metadata={"env": "prod"})
    second = await create(client, name="beta", metadata={"env": "dev"})
    await client.patch(f"/v1/agents/{second['id']}", json={"deployment_chat": True})
    listed = (await client.get("/v1/agents")).json()
    assert [a["id"] for a in listed] == [second["id"], first["id"]]
    assert listed[0]["version"] == 2 and listed[0]["versions"] == [1, 2]
    page = (await client.get("/v1/agents", params={"page": 1, "page_size": 1})).json()
    assert [a["id"] for a in page] == [first["id"]]

    async def ids(**params: Any) -> list[str]:
        response = await client.get("/v1/agents", params=params)
        assert response.status_code == 200, response.text
        return [a["id"] for a in response.json()]

    assert await ids(name="alpha") == [first["id"]]
    assert await ids(search="ALP") == [first["id"]]
    assert await ids(id=second["id"]) == [second["id"]]
    assert await ids(deployment_chat=True) == [second["id"]]
    assert await ids(metadata='{"env": "dev"}') == [second["id"]]
    assert await ids(sources=["playground"]) == []
    assert await ids(sources=["api"]) == [second["id"], first["id"]]
    # The SDK's unset sentinel is no filter.
    assert await ids(metadata="~?~unset~?~sentinel~?~") == [second["id"], first["id"]]
    bad = await client.get("/v1/agents", params={"metadata": '{"env": 1}'})
    assert bad.status_code == 400
    assert (await client.get("/v1/agents", params={"page_size": 0})).status_code == 400


async def test_cursor_pages(client: httpx.AsyncClient) -> None:
    made = [(await create(client, name=f"a{i}"))["id"] for i in range(5)]
    seen: list[str] = []
    token: str | None = None
    for _ in range(5):
        params: dict[str, Any] = {"page_size": 2}
        if token:
            params["page_token"] = token
        body = (await client.get("/v1/agents/pages", params=params)).json()
        assert body["object"] == "list"
        seen += [a["id"] for a in body["data"]]
        token = body["next_page_token"]
        if token is None:
            break
    assert seen == list(reversed(made))
    bad = await client.get("/v1/agents/pages", params={"page_token": "garbage!"})
    assert bad.status_code == 400
    filtered = (await client.get("/v1/agents/pages", params={"name": "a3"})).json()
    assert [a["id"] for a in filtered["data"]] == [made[3]]
    assert filtered["next_page_token"] is None


async def test_delete(client: httpx.AsyncClient) -> None:
    agent_id = (await create(client))["id"]
    await client.patch(f"/v1/agents/{agent_id}", json={"instructions": "v2"})
    await client.put(f"/v1/agents/{agent_id}/aliases", params={"alias": "prod", "version": 2})
    response = await client.delete(f"/v1/agents/{agent_id}")
    assert response.status_code == 204 and response.content == b""
    assert (await client.get(f"/v1/agents/{agent_id}")).status_code == 404
    assert (await client.delete(f"/v1/agents/{agent_id}")).status_code == 404
    assert (await client.get("/v1/agents")).json() == []


async def test_another_workspace_gets_404_everywhere(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    agent_id = (await create(client))["id"]
    await client.put(f"/v1/agents/{agent_id}/aliases", params={"alias": "prod", "version": 1})
    base = f"/v1/agents/{agent_id}"
    async with make_client(app, other.key) as foreign:
        calls = [
            foreign.get(base),
            foreign.get(base, params={"agent_version": "prod"}),
            foreign.patch(base, json={"name": "stolen"}),
            foreign.patch(f"{base}/version", params={"version": 1}),
            foreign.get(f"{base}/versions"),
            foreign.get(f"{base}/versions/1"),
            foreign.get(f"{base}/aliases"),
            foreign.put(f"{base}/aliases", params={"alias": "x", "version": 1}),
            foreign.delete(f"{base}/aliases", params={"alias": "prod"}),
            foreign.delete(base),
        ]
        for call in calls:
            response = await call
            assert response.status_code == 404, response.request.url
        assert (await foreign.get("/v1/agents")).json() == []
        assert (await foreign.get("/v1/agents/pages")).json()["data"] == []
        assert (await foreign.get("/v1/agents", params={"id": agent_id})).json() == []
    still = (await client.get(base)).json()
    assert still["name"] == "helper" and still["versions"] == [1]


async def test_requires_a_key(anon_client: httpx.AsyncClient) -> None:
    assert (await anon_client.get("/v1/agents")).status_code == 401
