"""Two server processes of one `serve --workers`, each with its own services, on one hub: what
lives in process memory stays right across them. Caches get a 60 s TTL here, so that only the
hub can explain how fast the other process sees a change; without the hub each process would
admit its own requests per second and keep serving a deleted key for a minute."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.config import make_data_dir
from maestrale.hub import frames
from maestrale.hub.engines import EngineHost, RemoteEngine
from maestrale.hub.hosting import open_hub
from tests.support.app_fixtures import ADMIN_KEY, create_owner_key, make_client
from tests.support.app_fixtures import test_settings as make_settings

pytestmark = pytest.mark.both_databases()

RPS = 4
LOCAL = "smollm2-135m-instruct"


@pytest.fixture
async def pair(database_url: str, tmp_path: Path) -> AsyncIterator[tuple[FastAPI, FastAPI]]:
    data_dir = tmp_path / "data"
    make_data_dir(data_dir)
    path = frames.hub_path(data_dir)  # where `serve --workers` puts it
    settings = make_settings(
        database_url,
        data_dir,
        hub_socket=path,
        auth_cache_ttl=60,
        limits_cache_ttl=60,
        limits={"requests_per_second": RPS},
    )
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(open_hub(settings, path))
        apps = []
        for _ in range(2):
            app = create_app(settings)
            await stack.enter_async_context(app.router.lifespan_context(app))
            apps.append(app)
        yield apps[0], apps[1]


def _chat(model: str = "maestrale-echo") -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


async def test_requests_per_second_are_counted_once_for_all_processes(
    pair: tuple[FastAPI, FastAPI],
) -> None:
    async with make_client(pair[0]) as a, make_client(pair[1]) as b:
        await asyncio.sleep(1.1)  # the bootstrap's requests are out of the window
        responses = await asyncio.gather(
            *(c.post("/v1/chat/completions", json=_chat()) for c in (a, b) * RPS)
        )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * RPS + [429] * RPS  # two processes' own counters would admit all


async def test_a_deleted_key_is_refused_by_every_process_at_once(
    pair: tuple[FastAPI, FastAPI],
) -> None:
    async with make_client(pair[0], None) as admin:
        admin.headers["x-api-key"] = ADMIN_KEY
        created = await create_owner_key(admin)
        a, b = make_client(pair[0], created["key"]), make_client(pair[1], created["key"])
        async with a, b:
            assert (await a.get("/v1/models")).status_code == 200
            assert (await b.get("/v1/models")).status_code == 200  # now cached by both
            deleted = await admin.delete(f"/v1/admin/api-keys/{created['key_id']}")
            assert deleted.status_code == 200
            for _ in range(100):  # the broadcast crosses the hub: a few loop turns at most
                if (await b.get("/v1/models")).status_code == 401:
                    break
                await asyncio.sleep(0.01)
            assert (await b.get("/v1/models")).status_code == 401
            assert (await a.get("/v1/models")).status_code == 401


async def test_local_models_are_loaded_once_by_the_hub(
    pair: tuple[FastAPI, FastAPI], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both processes chat with the local model through proxies; the model itself is in the
    hub's registry (one per machine), never in a server process's."""
    engines = [app.state.services.engines.resolve(LOCAL).engine for app in pair]
    assert all(isinstance(engine, RemoteEngine) for engine in engines)
    clients = [make_client(app) for app in pair]
    async with clients[0] as a, clients[1] as b:
        body = {**_chat(LOCAL), "temperature": 0}
        plain = await asyncio.gather(*(c.post("/v1/chat/completions", json=body) for c in (a, b)))
        assert [r.status_code for r in plain] == [200, 200]
        assert plain[0].json()["choices"][0]["message"] == plain[1].json()["choices"][0]["message"]
        await asyncio.sleep(1.1)  # a fresh second of the limit
        async with b.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as s:
            assert s.status_code == 200
            text = "".join([line async for line in s.aiter_lines()])
        assert "[DONE]" in text and '"usage"' in text


def test_the_host_serves_the_engines_that_load_weights() -> None:
    from maestrale.engines.registry import ENGINES
    from maestrale.engines.specs import load_catalog
    from maestrale.hub.engines import HOSTED

    assert set(ENGINES) >= HOSTED
    host = EngineHost(load_catalog(None))
    described = host.describe()
    assert LOCAL in described and "maestrale-echo" not in described
    assert {"chat", "fim"} <= set(described[LOCAL].calls)
    assert "chat_stream" in described[LOCAL].streams
    engines = {spec.id: spec.engine for spec in host.registry.specs}
    assert set(engines.values()) <= HOSTED


async def test_moderation_and_embeddings_through_the_hub(pair: tuple[FastAPI, FastAPI]) -> None:
    """The moderation engine stays in the process and embeds with the hub's e5."""
    async with make_client(pair[1]) as b:
        embedded = await b.post(
            "/v1/embeddings", json={"model": "mistral-embed", "input": ["a cat", "a dog"]}
        )
        assert embedded.status_code == 200, embedded.text
        assert len(embedded.json()["data"]) == 2
        moderated = await b.post(
            "/v1/moderations",
            json={"model": "mistral-moderation-latest", "input": ["I will hurt you"]},
        )
        assert moderated.status_code == 200, moderated.text
        assert moderated.json()["results"][0]["category_scores"]


async def test_the_cli_revokes_a_key_in_every_running_process(
    pair: tuple[FastAPI, FastAPI], database_url: str, tmp_path: Path
) -> None:
    """`maestrale keys revoke` finds the hub of the server on its data directory."""
    from maestrale.core.auth.invalidation import Invalidation
    from maestrale.hub.bus import publish_once

    heard: list[Invalidation] = []
    for app in pair:
        app.state.services.invalidator.subscribe_local(heard.append)
    settings = pair[0].state.settings
    # the CLI's settings name the data directory only: the hub is found from it
    cli = settings.model_copy(update={"hub_socket": None})
    elsewhere = settings.model_copy(update={"hub_socket": None, "data_dir": tmp_path / "other"})
    await publish_once(elsewhere, [Invalidation("key", "k1")])  # no server there: nobody hears
    await publish_once(cli, [Invalidation("key", "k2")])
    for _ in range(100):
        if len(heard) == 2:
            break
        await asyncio.sleep(0.01)
    assert heard == [Invalidation("key", "k2")] * 2


async def test_metrics_are_those_of_every_process(pair: tuple[FastAPI, FastAPI]) -> None:
    async with make_client(pair[0]) as a, make_client(pair[1]) as b:
        for client, count in ((a, 3), (b, 2)):
            for _ in range(count):
                assert (await client.get("/v1/models")).status_code == 200
        scraped = [(await c.get("/metrics")).text for c in (a, b)]
    for text in scraped:
        line = next(
            x
            for x in text.splitlines()
            if x.startswith("maestrale_http_requests_total{")
            and 'route="/v1/models"' in x
            and 'status="200"' in x
        )
        assert float(line.rsplit(" ", 1)[1]) == 5.0  # 3 + 2, whichever process is scraped
        assert text.count("# TYPE maestrale_http_requests_total counter") == 1
