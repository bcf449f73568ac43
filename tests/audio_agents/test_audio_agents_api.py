"""/v1/audio/agents and /v1/audio/sessions through the in-process client, on each database:
versions, cursor paging, defaults from the catalog, bad models and tools refused naming the
field (nothing stored), another workspace's agents and sessions not found, and the session's
token, join window and end."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.audio_agents.repository import AudioSessionRepository
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from tests.support.app_fixtures import TenantKey, make_client

pytestmark = pytest.mark.both_databases("maestrale.audio_agents.repository")

CONFIG: dict[str, Any] = {
    "llm": {"model": "maestrale-echo"},
    "tts": {"model": "maestrale-echo-speech", "voice_id": "echo-high"},
    "instructions": "Be brief.",
    "welcome_message": "Hello.",
}


async def create(client: httpx.AsyncClient, name: str, **config: Any) -> dict[str, Any]:
    response = await client.post(
        "/v1/audio/agents", json={"name": name, "configuration": {**CONFIG, **config}}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_versions_paging_and_defaults(app: FastAPI, client: httpx.AsyncClient) -> None:
    first = await create(client, "first", unknown_field=1)
    assert first["version"] == 1 and first["owner_id"] and first["name"] == "first"
    config = first["configuration"]
    assert config["tts"] == {"model": "maestrale-echo-speech", "voice_id": "echo-high"}
    assert config["turn"] == {"allow_interruptions": True} and "stt" in config
    updated = await client.put(
        f"/v1/audio/agents/{first['id']}",
        json={"name": "renamed", "configuration": {"llm": {"model": "maestrale-echo"}}},
    )
    assert updated.json()["version"] == 2
    # The whole configuration is replaced: the default speech model (a real engine's before the
    # builtin test double's) and its first voice.
    engines = app.state.services.engines
    speech = engines.serving("audio_speech")[0]
    resolved = engines.resolve(speech.id)
    voice = resolved.engine.voices(speech.upstream_model or speech.id)[0].id
    assert updated.json()["configuration"]["tts"] == {"model": speech.id, "voice_id": voice}
    old = await client.get(f"/v1/audio/agents/{first['id']}", params={"version": 1})
    assert old.json()["name"] == "first" and old.json()["version"] == 1
    missing = await client.get(f"/v1/audio/agents/{first['id']}", params={"version": 9})
    assert missing.status_code == 404

    page = (await client.get(f"/v1/audio/agents/{first['id']}/versions?page_size=1")).json()
    assert [v["version"] for v in page["data"]] == [1] and page["next_page_token"]
    rest = await client.get(
        f"/v1/audio/agents/{first['id']}/versions",
        params={"page_size": 1, "page_token": page["next_page_token"]},
    )
    assert [v["version"] for v in rest.json()["data"]] == [2]
    assert rest.json()["next_page_token"] is None

    for name in ("second", "third"):
        await create(client, name)
    seen, token = [], None
    while True:
        params: dict[str, Any] = {"page_size": 2, **({"page_token": token} if token else {})}
        listed = (await client.get("/v1/audio/agents", params=params)).json()
        seen += [a["name"] for a in listed["data"]]
        if not (token := listed["next_page_token"]):
            break
    assert seen == ["third", "second", "renamed"]
    found = await client.get("/v1/audio/agents", params={"search": "SEC"})
    assert [a["name"] for a in found.json()["data"]] == ["second"]
    bad = await client.get("/v1/audio/agents", params={"page_token": "garbage!"})
    assert bad.status_code == 400

    assert (await client.delete(f"/v1/audio/agents/{first['id']}")).status_code == 204
    assert (await client.get(f"/v1/audio/agents/{first['id']}")).status_code == 404


@pytest.mark.parametrize(
    ("config", "param"),
    [
        ({"llm": {"model": "maestrale-embed"}}, "configuration.llm.model"),
        ({"tts": {"model": "no-such-model"}}, "configuration.tts.model"),
        ({"stt": {"model": "maestrale-echo"}}, "configuration.stt.model"),
    ],
)
async def test_a_bad_model_is_refused_naming_the_field(
    client: httpx.AsyncClient, config: dict[str, Any], param: str
) -> None:
    response = await client.post("/v1/audio/agents", json={"name": "bad", "configuration": config})
    assert response.status_code == 400 and response.json()["param"] == param
    assert (await client.get("/v1/audio/agents")).json()["data"] == []


async def test_an_unknown_tool_type_is_a_422(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/audio/agents",
        json={"name": "x", "configuration": {"tools": [{"type": "teleport"}]}},
    )
    assert response.status_code == 422


async def test_another_workspace_sees_nothing(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    agent = await create(client, "mine")
    session = (await client.post("/v1/audio/sessions", json={"agent_id": agent["id"]})).json()
    async with make_client(app, other.key) as theirs:
        path = f"/v1/audio/agents/{agent['id']}"
        assert (await theirs.get(path)).status_code == 404
        put = await theirs.put(path, json={"name": "x", "configuration": {}})
        assert put.status_code == 404
        assert (await theirs.delete(path)).status_code == 404
        assert (await theirs.get(f"{path}/sessions")).status_code == 404
        assert (await theirs.get("/v1/audio/agents")).json()["data"] == []
        created = await theirs.post("/v1/audio/sessions", json={"agent_id": agent["id"]})
        assert created.status_code == 404
        assert (await theirs.get(f"/v1/audio/sessions/{session['id']}")).status_code == 404
        assert (await theirs.delete(f"/v1/audio/sessions/{session['id']}")).status_code == 404
    assert (await client.get(path)).status_code == 200


async def test_sessions(app: FastAPI, client: httpx.AsyncClient, tenant: Tenant) -> None:
    agent = await create(client, "voice")
    refused = await client.post(
        "/v1/audio/sessions",
        json={
            "agent_id": agent["id"],
            "tools": [{"type": "hang_up"}],
        },
    )
    assert refused.status_code == 400 and refused.json()["param"] == "tools[0]"
    created = await client.post("/v1/audio/sessions", json={"agent_id": agent["id"]})
    body = created.json()
    assert created.status_code == 200 and body["participant_token"]
    assert body["server_url"] == f"ws://test/v1/audio/sessions/{body['id']}/realtime"
    got = (await client.get(f"/v1/audio/sessions/{body['id']}")).json()
    assert got["status"] == "active" and got["num_participants"] == 0
    assert got["transcripts"] == []
    listed = (await client.get(f"/v1/audio/agents/{agent['id']}/sessions")).json()
    assert [s["id"] for s in listed["data"]] == [body["id"]]

    # Joining: the right token, within the window, once not ended.
    async with app.state.services.db.transaction() as work:
        repo = AudioSessionRepository(work.session, tenant)
        assert not await repo.start(body["id"], utcnow() + timedelta(minutes=16))
        assert await repo.start(body["id"], utcnow())
    assert (await client.delete(f"/v1/audio/sessions/{body['id']}")).status_code == 204
    ended = (await client.get(f"/v1/audio/sessions/{body['id']}")).json()
    assert ended["status"] == "ended"
    async with app.state.services.db.transaction() as work:
        assert not await AudioSessionRepository(work.session, tenant).start(body["id"], utcnow())
