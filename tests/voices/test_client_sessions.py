"""Client sessions: `POST /v1/client/sessions` mints a short-lived secret that opens the
realtime WebSockets of one model in place of the API key (as a Bearer token, or as a browser
offers it, in the subprotocols); an expired secret, one of another model or of a revoked key is
refused on the upgrade."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from maestrale.core.auth.client_sessions.tables import ClientSession
from maestrale.core.clock import utcnow
from tests.support.app_fixtures import ADMIN_KEY, create_owner_key, make_client
from tests.support.live import on_socket

pytestmark = pytest.mark.both_databases("maestrale.core.auth.client_sessions.repository")

PATH = "/v1/audio/transcriptions/realtime"


def realtime_model(app: FastAPI) -> str:
    registry = app.state.services.engines
    for spec in registry.specs:
        if spec.has("audio_transcription_realtime"):
            return str(spec.id)
    pytest.skip("no realtime transcription model is served (the [audio] extra)")


@pytest.fixture
async def served(app: FastAPI) -> AsyncIterator[str]:
    async with on_socket(app) as port:
        yield f"ws://127.0.0.1:{port}"


async def mint(client: httpx.AsyncClient, model: str, **fields: Any) -> httpx.Response:
    return await client.post(
        "/v1/client/sessions", json={"model": model, "purpose": "realtime", **fields}
    )


async def session_created(url: str, model: str, **options: Any) -> dict[str, Any]:
    """The first event of a realtime session opened with `options` (headers, subprotocols)."""
    async with connect(f"{url}{PATH}?model={model}", **options) as conn:
        event: dict[str, Any] = json.loads(await asyncio.wait_for(conn.recv(), 30))
        event["subprotocol"] = conn.subprotocol
        return event


async def refusal(url: str, model: str, secret: str) -> tuple[int, str]:
    with pytest.raises(InvalidStatus) as refused:
        await session_created(url, model, additional_headers={"Authorization": f"Bearer {secret}"})
    response = refused.value.response
    return response.status_code, json.loads(response.body or b"{}").get("code", "")


async def test_minting_checks_the_lifetime_and_the_model(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    model = realtime_model(app)
    minted = await mint(client, model, ttl_seconds=120)
    assert minted.status_code == 201, minted.text
    body = minted.json()
    assert body["object"] == "client.session" and body["purpose"] == "realtime"
    assert body["client_secret"]["value"].startswith("rt_")
    assert body["client_secret"]["expires_at"] == body["expires_at"]
    assert (await mint(client, model)).status_code == 201  # 10 minutes by default
    for ttl in (0, -5, 3601):
        bad = await mint(client, model, ttl_seconds=ttl)
        assert bad.status_code == 400 and bad.json()["code"] == "invalid_ttl", ttl
    assert (await mint(client, "no-such-model")).status_code == 404
    chat = await mint(client, "maestrale-echo")
    assert chat.status_code == 400 and chat.json()["code"] == "model_not_realtime"
    async with make_client(app, None) as anonymous:
        assert (await mint(anonymous, model)).status_code == 401


async def test_a_secret_opens_its_model_s_realtime_socket_until_it_is_refused(
    app: FastAPI, served: str
) -> None:
    model = realtime_model(app)
    async with make_client(app, ADMIN_KEY) as admin:
        admin.headers["x-api-key"] = ADMIN_KEY
        key = await create_owner_key(admin)
        async with make_client(app, key["key"]) as client:
            secret = (await mint(client, model)).json()["client_secret"]["value"]
            other = (await mint(client, "maestrale-echo-speech")).json()["client_secret"]["value"]

        # As the SDK sends a key, and as a browser offers it.
        bearer = {"additional_headers": {"Authorization": f"Bearer {secret}"}}
        created = await session_created(served, model, **bearer)
        assert created["type"] == "session.created" and created["subprotocol"] is None
        browser = await session_created(served, model, subprotocols=["realtime", secret])
        assert browser["type"] == "session.created" and browser["subprotocol"] == "realtime"

        assert await refusal(served, model, other) == (401, "client_secret_model_mismatch")
        assert await refusal(served, model, "rt_not_a_secret") == (401, "invalid_client_secret")

        revoked = await admin.delete(f"/v1/admin/api-keys/{key['key_id']}")
        assert revoked.status_code in (200, 204), revoked.text
        assert await refusal(served, model, secret) == (401, "invalid_client_secret")

    async with make_client(app) as client:
        secret = (await mint(client, model)).json()["client_secret"]["value"]
    async with app.state.services.db.transaction() as work:
        past = utcnow() - timedelta(seconds=1)
        await work.session.execute(update(ClientSession).values(expires_at=past))
    assert await refusal(served, model, secret) == (401, "invalid_client_secret")
