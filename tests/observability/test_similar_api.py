"""Similar events: nearest by the embedding of the conversation (builtin feature hashing),
computed lazily once per event, scoped to the workspace."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select, update
from sqlalchemy import text as sql

from maestrale.observability.events import vector_repository as similar_vectors
from maestrale.observability.events.tables import EventEmbedding
from tests.observability.events_seed import make_event, obs_error
from tests.support.app_fixtures import TenantKey, make_client

pytestmark = pytest.mark.both_databases("maestrale.observability.events.vector_repository")

SEARCH = "/v1/observability/chat-completion-events/search"


@pytest.fixture(autouse=True)
def builtin_embeddings(app: FastAPI) -> None:
    """The builtin feature-hashing model: deterministic, and present without the extras."""
    app.state.settings.similar_events_model = "maestrale-embed"


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
    await app.state.services.recorder.flush()
    ids = await ids_by_correlation(client)
    url = f"/v1/observability/chat-completion-events/{ids['cats-1']}/similar-events"
    resp = await client.get(url)
    assert resp.status_code == 200, resp.text
    results = resp.json()["completion_events"]["results"]
    ranked = [e["correlation_id"] for e in results]
    assert ranked[0] == "cats-2"
    assert "cats-1" not in ranked and "foreign" not in ranked
    async with app.state.services.db.transaction() as work:
        count = (
            await work.session.execute(select(func.count()).select_from(EventEmbedding))
        ).scalar()
    assert count == 4
    # Computed once: a second request embeds nothing new and gives the same answer.
    again = await client.get(url)
    assert [e["correlation_id"] for e in again.json()["completion_events"]["results"]] == ranked
    async with app.state.services.db.transaction() as work:
        recount = (
            await work.session.execute(select(func.count()).select_from(EventEmbedding))
        ).scalar()
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
    await app.state.services.recorder.flush()
    ids = await ids_by_correlation(client)
    resp = await client.get(
        f"/v1/observability/chat-completion-events/{ids['alone']}/similar-events"
    )
    assert resp.json() == {"completion_events": {"results": [], "next": None, "cursor": None}}


async def _seed_conversations(app: FastAPI, client: httpx.AsyncClient) -> dict[str, str]:
    texts = {
        "cats-1": "my cat sleeps on the warm sofa all day",
        "cats-2": "the cat sleeps on the sofa",
        "tax": "how do I file quarterly tax returns for a company",
        "noise": "zebra quantum harmonica",
    }
    for correlation, text in texts.items():
        await make_event(client, correlation, text, {})
    await app.state.services.recorder.flush()
    return await ids_by_correlation(client)


async def ranked(client: httpx.AsyncClient, event_id: str) -> list[str]:
    resp = await client.get(f"/v1/observability/chat-completion-events/{event_id}/similar-events")
    assert resp.status_code == 200, resp.text
    return [e["correlation_id"] for e in resp.json()["completion_events"]["results"]]


async def test_similar_events_search_the_stored_vectors(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = await _seed_conversations(app, client)
    first = await ranked(client, ids["cats-1"])
    # A scan one vector at a time finds the same nearest events as one chunk.
    monkeypatch.setattr(similar_vectors, "SCAN_CHUNK", 1)
    assert await ranked(client, ids["cats-1"]) == first
    # Give "tax" the stored vector of "cats-1": it becomes the nearest, so the answer comes
    # from the stored vectors (normalised float32), not from a fresh embedding.
    async with app.state.services.db.transaction() as work:
        stored = (
            await work.session.execute(
                select(EventEmbedding.vector).where(EventEmbedding.event_id == ids["cats-1"])
            )
        ).scalar_one()
        assert abs(float(np.linalg.norm(np.frombuffer(stored, dtype=np.float32))) - 1) < 1e-5
        await work.session.execute(
            update(EventEmbedding)
            .where(EventEmbedding.event_id == ids["tax"])
            .values(vector=stored)
        )
    assert (await ranked(client, ids["cats-1"]))[0] == "tax"


async def test_similar_events_embed_lazily_within_the_limit(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    ids = await _seed_conversations(app, client)
    async with make_client(app, other.key) as foreign:
        await make_event(foreign, "foreign", "the cat sleeps on the sofa", {})
    await app.state.services.recorder.flush()
    app.state.settings.similar_events_embed_limit = 1

    async def stored() -> dict[str, int]:
        async with app.state.services.db.transaction() as work:
            rows = await work.session.execute(
                select(EventEmbedding.workspace_id, func.count()).group_by(
                    EventEmbedding.workspace_id
                )
            )
            return {ws: int(n) for ws, n in rows.all()}

    # The event asked about, then one more (the newest without a vector) per request.
    assert len(await ranked(client, ids["tax"])) <= 1
    assert list((await stored()).values()) == [2]
    await ranked(client, ids["tax"])
    await ranked(client, ids["tax"])
    counts = await stored()
    assert list(counts.values()) == [4] and other.tenant.workspace_id not in counts
    nearest = await ranked(client, ids["cats-1"])
    assert nearest[0] == "cats-2" and "foreign" not in nearest


async def test_similar_events_with_pgvector(
    app: FastAPI, client: httpx.AsyncClient, database_url: str
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("pgvector is a Postgres extension")
    async with app.state.services.db.transaction() as work:
        available = await work.session.scalar(
            sql("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        )
    if not available:
        pytest.skip("the pgvector extension is not available on this Postgres server")
    ids = await _seed_conversations(app, client)
    assert (await ranked(client, ids["cats-1"]))[0] == "cats-2"
    async with app.state.services.db.transaction() as work:
        installed = await work.session.scalar(
            sql("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
        )
    if not installed:
        pytest.skip("pgvector is available but this role may not CREATE EXTENSION vector")
    async with app.state.services.db.transaction() as work:
        count = await work.session.scalar(
            sql(f"SELECT count(*) FROM {similar_vectors.PGVECTOR_TABLE}")
        )
    assert count == 4
