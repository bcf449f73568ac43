"""Similar events: nearest by the embedding of the conversation (builtin feature hashing),
computed lazily once per event, scoped to the workspace."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from maestrale.observability.tables import EventEmbedding
from tests.observability.events_seed import make_event, obs_error
from tests.support.app_fixtures import TenantKey, make_client

SEARCH = "/v1/observability/chat-completion-events/search"


async def ids_by_correlation(client: httpx.AsyncClient) -> dict[str, str]:
    resp = await client.post(SEARCH, json={"search_params": {"filters": None}})
    return {e["correlation_id"]: e["event_id"] for e in resp.json()["completion_events"]["results"]}


async def test_similar_events_rank_by_conversation(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    texts = {
        "cats-1": "my cat sleeps on the warm sofa all day",
        "cats-2": "the cat sleeps on the sofa",
        "tax": "how do I file quarterly tax returns for a company",
        "noise": "zebra quantum harmonica",
    }
    for correlation, text in texts.items():
        await make_event(client, correlation, text, {})
    async with make_client(app, other.key) as foreign:
        await make_event(foreign, "foreign", "my cat sleeps on the warm sofa all day", {})
    await app.state.recorder.flush()
    ids = await ids_by_correlation(client)
    url = f"/v1/observability/chat-completion-events/{ids['cats-1']}/similar-events"
    resp = await client.get(url)
    assert resp.status_code == 200, resp.text
    results = resp.json()["completion_events"]["results"]
    ranked = [e["correlation_id"] for e in results]
    assert ranked[0] == "cats-2"
    assert "cats-1" not in ranked and "foreign" not in ranked
    async with app.state.db.session() as session:
        count = (await session.execute(select(func.count()).select_from(EventEmbedding))).scalar()
    assert count == 4
    # Computed once: a second request embeds nothing new and gives the same answer.
    again = await client.get(url)
    assert [e["correlation_id"] for e in again.json()["completion_events"]["results"]] == ranked
    async with app.state.db.session() as session:
        recount = (await session.execute(select(func.count()).select_from(EventEmbedding))).scalar()
    assert recount == 4
    async with make_client(app, other.key) as foreign:
        obs_error(await foreign.get(url), 404, "SEARCH_NOT_FOUND")
    obs_error(
        await client.get("/v1/observability/chat-completion-events/missing/similar-events"),
        404,
        "SEARCH_NOT_FOUND",
    )


async def test_similar_events_of_a_lone_event(app: FastAPI, client: httpx.AsyncClient) -> None:
    await make_event(client, "alone", "hello", {})
    await app.state.recorder.flush()
    ids = await ids_by_correlation(client)
    resp = await client.get(
        f"/v1/observability/chat-completion-events/{ids['alone']}/similar-events"
    )
    assert resp.json() == {"completion_events": {"results": [], "next": None, "cursor": None}}
