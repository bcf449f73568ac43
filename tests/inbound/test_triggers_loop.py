"""Loops are cut: a trigger whose agent's tool call ends up calling the trigger's own webhook.

The agent (builtin model) searches the web; its search backend here stands for a provider that,
when called, sends the webhook a delivery (signed as GitHub signs), passing on the depth header
the server's outbound call carried. Each round runs one level deeper, until the receiver cuts
it at `trigger_max_depth` (508) and nothing more starts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from aiohttp import web
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.tracing import TRIGGER_DEPTH_HEADER as HEADER
from tests.inbound.trigger_support import github_headers, github_webhook, run_jobs, trigger_body
from tests.support import app_fixtures
from tests.support.app_fixtures import make_client

CALL = '/call web_search {"query": "loop"}'


class Provider:
    """The search backend that calls the webhook back: what it saw and what it got."""

    def __init__(self) -> None:
        self.app: FastAPI | None = None
        self.path = ""
        self.depths: list[str | None] = []
        self.answers: list[int] = []

    async def search(self, request: web.Request) -> web.Response:
        depth = request.headers.get(HEADER)
        self.depths.append(depth)
        assert self.app is not None
        body = f"{CALL}\nround {len(self.depths)}".encode()  # a new body: not a replay
        async with make_client(self.app, None) as anon:
            sent = await anon.post(
                self.path, content=body, headers=github_headers(body, depth=int(depth or 0))
            )
        self.answers.append(sent.status_code)
        return web.json_response({"results": []})


@pytest.fixture
async def provider() -> AsyncIterator[tuple[str, Provider]]:
    probe = Provider()
    server = web.Application()
    server.router.add_get("/search", probe.search)
    runner = web.AppRunner(server)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", probe
    finally:
        await runner.cleanup()


@pytest.fixture
async def loop_app(
    database_url: str, tmp_path: Path, provider: tuple[str, Provider]
) -> AsyncIterator[FastAPI]:
    base, _ = provider
    settings = app_fixtures.test_settings(
        database_url,
        tmp_path / "data",
        web_search_url=base,
        web_search_allow_private=True,
        trigger_max_depth=3,
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def test_a_trigger_calling_its_own_webhook_stops_at_the_max_depth(
    loop_app: FastAPI, provider: tuple[str, Provider]
) -> None:
    _, probe = provider
    async with make_client(loop_app) as client:
        webhook = await github_webhook(client)
        agent = await client.post(
            "/v1/agents",
            json={"model": "maestrale-echo", "name": "looper", "tools": [{"type": "web_search"}]},
        )
        assert agent.status_code in (200, 201), agent.text
        body = trigger_body(webhook["id"], "agents", agent.json()["id"], "start_agent_session")
        trigger: dict[str, Any] = (await client.post("/v1/triggers", json=body)).json()
        probe.app, probe.path = loop_app, httpx.URL(webhook["url"]).path

        first = CALL.encode()
        async with make_client(loop_app, None) as anon:
            sent = await anon.post(probe.path, content=first, headers=github_headers(first))
        assert sent.status_code == 200, sent.text
        await run_jobs(loop_app, timeout=60)

        # Depth 0 (the outside delivery), 1 and 2 started a conversation each; the third
        # conversation's call back, at depth 3, was cut.
        assert probe.depths == ["1", "2", "3"], probe.answers
        assert probe.answers == [200, 200, 508]
        events = (await client.get(f"/v1/triggers/{trigger['id']}/events")).json()["data"]
        assert [e["status"] for e in events] == ["TRIGGERED"] * 3
        conversations = (await client.get("/v1/conversations")).json()
        assert len(conversations) == 3
        deliveries = (await client.get(f"/v1/webhooks/{webhook['id']}/deliveries")).json()
        statuses = sorted(d["status"] for d in deliveries["data"])
        assert statuses == ["accepted"] * 3 + ["loop_cut"], orjson.dumps(deliveries)
