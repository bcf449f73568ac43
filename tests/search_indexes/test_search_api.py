"""POST /v1/context/search-indexes/{name}/search: nearest neighbours (a vector sent or a query
embedded with no session open), keywords (`or`, `and`), their fusion, filters, and the 400s,
404s and 409 of what cannot be searched."""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np
import pytest
from fastapi import FastAPI

from maestrale.libraries.ingest import embedding
from tests.search_indexes.reading_corpus import Corpus, seed_corpus
from tests.search_indexes.seed import Part, seed_document, seed_index
from tests.support.app_fixtures import make_client

pytestmark = pytest.mark.both_databases("maestrale.search_indexes.retrieval.chunks")
URL = "/v1/context/search-indexes/docs/search"


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
async def corpus(shared_app: FastAPI) -> Corpus:
    return await seed_corpus(shared_app)


async def hits(client: httpx.AsyncClient, retriever: dict[str, Any], url: str = URL) -> Any:
    resp = await client.post(url, json={"retriever": retriever})
    assert resp.status_code == 200, resp.text
    return resp.json()["hits"]


def nn(vector: list[float], **more: Any) -> dict[str, Any]:
    return {"type": "nearest_neighbour", "query_embedding": vector, **more}


def ids(found: list[dict[str, Any]], corpus: Corpus) -> list[str]:
    names = {str(v): k for k, v in corpus.ids.items()}
    return [names[hit["chunk"]["id"]] for hit in found]


async def test_nearest_neighbours_of_a_vector(corpus: Corpus, shared_client: httpx.AsyncClient):
    found = await hits(shared_client, nn([2, 0, 0], top_k=2))
    assert ids(found, corpus) == ["a0", "a2"]
    assert found[0] == {
        "chunk": {
            "id": str(corpus.ids["a0"]),
            "source_id": "a",
            "locator": "page=1",
            "start_offset": 0,
            "end_offset": 19,
            "chunk_type": "text",
            "content": "the quick brown fox",
            "parent_ref": None,
            "metadata": {"page": 1},
            "lang": "en",
            "summary": "Fox summary",
        },
        "score": pytest.approx(1.0),
        "index_name": "docs",
        "distance": pytest.approx(0.0, abs=1e-6),
    }
    assert found[1]["score"] == pytest.approx(np.sqrt(0.5), abs=1e-5)
    filtered = await hits(
        shared_client, nn([0, 0, 1], filter={"type": "equal", "field": "lang", "value": "en"})
    )
    assert ids(filtered, corpus) == ["a0", "a2"]  # the nearest (b0) has no `lang`


async def test_a_query_is_embedded_by_the_index_model_with_no_session_open(
    shared_app: FastAPI,
    corpus: Corpus,
    shared_client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db, tenant = shared_app.state.services.db, corpus.tenant
    index = await seed_index(db, tenant, "embedded", embedding_model="fake-embed")
    await seed_document(
        db,
        tenant,
        index,
        "s",
        [Part("north", [1, 0, 0]), Part("east", [0, 1, 0])],
        model="fake-embed",
    )
    asked: list[tuple[str, str | None]] = []

    async def fake(services: Any, text: str, *, model_name: str | None = None) -> Any:
        db.check_released("the test's embedding")  # raises when a connection is held
        asked.append((text, model_name))
        return np.array([0.0, 1.0, 0.0], dtype=np.float32), model_name, 1

    monkeypatch.setattr(embedding, "embed_query", fake)
    url = "/v1/context/search-indexes/embedded/search"
    found = await hits(shared_client, {"type": "nearest_neighbour", "query": "e", "top_k": 1}, url)
    assert [hit["chunk"]["content"] for hit in found] == ["east"] and asked == [("e", "fake-embed")]


async def test_keywords_any_or_every_word(corpus: Corpus, shared_client: httpx.AsyncClient):
    found = await hits(shared_client, {"type": "keyword", "query": "fox dog"})
    assert set(ids(found, corpus)) == {"a0", "a1", "a2"}
    assert [hit["score"] for hit in found] == [1.0, 0.5, pytest.approx(1 / 3)]
    assert all("distance" not in hit or hit["distance"] is None for hit in found)
    every = await hits(shared_client, {"type": "keyword", "query": "Quick DOG", "operator": "and"})
    assert ids(every, corpus) == ["a2"]


async def test_fusion_weighs_and_filters_its_children(
    corpus: Corpus, shared_client: httpx.AsyncClient
) -> None:
    rrf = {
        "type": "rrf",
        "retrievers": [nn([0, 1, 0], top_k=3), {"type": "keyword", "query": "fox"}],
        "weights": [1.0, 3.0],
        "rank_constant": 1,
    }
    found = await hits(shared_client, rrf)
    # nn: a1 (1), a2 (2), then a0 or b0 (3, cosine 0); keyword: a0 (1).
    assert ids(found, corpus)[:3] == ["a0", "a1", "a2"]
    scores = [hit["score"] for hit in found]
    assert scores[0] >= 3 / 2 and scores[1:3] == [pytest.approx(1 / 2), pytest.approx(1 / 3)]
    rrf["filter"] = {
        "type": "not",
        "match": {"type": "equal", "field": "chunk_type", "value": "table"},
    }
    rrf["top_k"] = 2
    assert ids(await hits(shared_client, rrf), corpus) == ["a0", "a1"]


async def test_filters_reach_metadata_and_document_fields(
    corpus: Corpus, shared_client: httpx.AsyncClient
) -> None:
    published = {"type": "range", "field": "published", "lt": "2024-03-01T01:00:00+00:00"}
    assert set(ids(await hits(shared_client, nn([0, 0, 1], filter=published)), corpus)) == {
        "a0",
        "a1",
        "a2",
    }
    page = {"type": "in", "field": "metadata.page", "values": [2]}
    year = {"type": "equal", "field": "year", "value": 2020}
    both = {"type": "and", "matches": [page, year]}
    assert ids(await hits(shared_client, nn([1, 0, 0], filter=both)), corpus) == ["a2", "a1"]


@pytest.mark.parametrize(
    "retriever",
    [
        nn([1, 0]),  # not the index's dimension
        nn([0, 0, 0]),
        nn([1, 0, 0], top_k=0),
        nn([1, 0, 0], top_k=1001),
        nn([1, 0, 0], max_candidates=4097),
        nn([1, 0, 0], field="lang"),  # not a dense_vector field
        {"type": "nearest_neighbour"},
        {"type": "nearest_neighbour", "query": "custom embeddings need a vector"},
        {"type": "keyword", "query": "fox", "field": "summary"},
        {"type": "keyword", "query": "fox", "filter": {"type": "in", "field": "x", "values": 1}},
        {"type": "rrf", "retrievers": []},
        {"type": "rrf", "retrievers": [{"type": "rrf", "retrievers": [nn([1, 0, 0])]}]},
        {"type": "rrf", "retrievers": [nn([1, 0, 0])], "weights": [1, 2]},
        {"type": "rrf", "retrievers": [nn([1, 0, 0])], "rank_constant": 0},
        {"type": "rrf", "retrievers": [nn([1, 0, 0])] * 11},
    ],
)
async def test_what_cannot_be_searched_is_a_400(
    corpus: Corpus, shared_client: httpx.AsyncClient, retriever: dict[str, Any]
) -> None:
    resp = await shared_client.post(URL, json={"retriever": retriever})
    assert resp.status_code == 400, resp.text
    assert resp.json()["code"] == "invalid_retriever"


async def test_unknown_foreign_and_unready_indexes(
    shared_app: FastAPI, corpus: Corpus, shared_client: httpx.AsyncClient
) -> None:
    body = {"retriever": nn([1, 0, 0])}
    async with make_client(shared_app, corpus.other.key) as other:
        foreign = await other.post(URL, json=body)
    assert foreign.status_code == 404 and foreign.json()["code"] == "index_not_found"
    unready = await shared_client.post("/v1/context/search-indexes/building/search", json=body)
    assert unready.status_code == 409 and unready.json()["code"] == "index_not_ready"
    # The second index holds the same text: each search sees its own index's chunks only.
    found = await hits(shared_client, nn([1, 0, 0]), "/v1/context/search-indexes/second/search")
    assert [hit["chunk"]["id"] for hit in found] == [str(corpus.ids["x0"])]
