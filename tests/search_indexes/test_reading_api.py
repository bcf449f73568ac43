"""navigate, read, grep and get_chunk of /v1/context/search-indexes/{name}: chunks in reading
order, 404 for a source with no chunk against an empty list for one whose chunks none match,
the content_type of a text chunk field, and RE2 patterns (an invalid or runaway one is a 400).

Source `a` of the corpus: a0 [0, 19) "the quick brown fox", a1 [20, 35) "lazy dog sleeps",
a2 [36, 59) "brown dog and quick cat"."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.search_indexes.reading_corpus import Corpus, seed_corpus
from tests.support.app_fixtures import make_client

pytestmark = pytest.mark.both_databases("maestrale.search_indexes.retrieval.chunks")
BASE = "/v1/context/search-indexes/docs"


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
async def corpus(shared_app: FastAPI) -> Corpus:
    return await seed_corpus(shared_app)


async def chunks(client: httpx.AsyncClient, op: str, corpus: Corpus, **body: Any) -> list[str]:
    """The names (a0...) of the chunks an operation answers, checked to be in reading order."""
    resp = await client.post(f"{BASE}/{op}", json={"source_id": "a", **body})
    assert resp.status_code == 200, resp.text
    found = resp.json()["chunks"]
    assert [c["start_offset"] for c in found] == sorted(c["start_offset"] for c in found)
    names = {str(v): k for k, v in corpus.ids.items()}
    return [names[c["id"]] for c in found]


async def refused(client: httpx.AsyncClient, op: str, status: int, **body: Any) -> str:
    resp = await client.post(f"{BASE}/{op}", json={"source_id": "a", **body})
    assert resp.status_code == status, resp.text
    return str(resp.json()["code"])


async def test_navigate_next_and_previous(corpus: Corpus, shared_client: httpx.AsyncClient):
    def nav(start: int, end: int, direction: str, top_k: int = 1) -> Any:
        return chunks(
            shared_client,
            "navigate",
            corpus,
            start_offset=start,
            end_offset=end,
            direction=direction,
            top_k=top_k,
        )

    assert await nav(0, 19, "next") == ["a1"]
    assert await nav(0, 19, "next", 5) == ["a1", "a2"]
    assert await nav(36, 59, "previous") == ["a1"]  # the nearest first...
    assert await nav(36, 59, "previous", 5) == ["a0", "a1"]  # ...then in reading order
    assert await nav(36, 59, "next") == [] and await nav(0, 19, "previous") == []
    assert await nav(10_000, 10_001, "next") == []
    body = {"start_offset": 0, "end_offset": 1, "direction": "next"}
    assert await refused(shared_client, "navigate", 400, **body, top_k=1001) == "invalid_retriever"
    assert await refused(shared_client, "navigate", 400, **{**body, "start_offset": -1}) == (
        "invalid_retriever"
    )


async def test_read_a_span(corpus: Corpus, shared_client: httpx.AsyncClient) -> None:
    assert await chunks(shared_client, "read", corpus) == ["a0", "a1", "a2"]
    assert await chunks(shared_client, "read", corpus, start_offset=20) == ["a1", "a2"]
    assert await chunks(shared_client, "read", corpus, end_offset=36) == ["a0", "a1"]
    assert await chunks(shared_client, "read", corpus, start_offset=1, end_offset=58) == ["a1"]
    assert await chunks(shared_client, "read", corpus, top_k=1) == ["a0"]
    assert await chunks(shared_client, "read", corpus, start_offset=10**6) == []
    assert await refused(shared_client, "read", 400, start_offset=5, end_offset=4) == (
        "invalid_retriever"
    )
    summaries = await shared_client.post(
        f"{BASE}/read", json={"source_id": "a", "content_type": "summary", "end_offset": 35}
    )
    assert [c["content"] for c in summaries.json()["chunks"]] == ["Fox summary", ""]
    for content_type in ("lang", "embedding", "nope"):  # a keyword field, a vector, nothing
        assert await refused(shared_client, "read", 400, content_type=content_type) == (
            "invalid_retriever"
        )


async def test_grep_modes(corpus: Corpus, shared_client: httpx.AsyncClient) -> None:
    async def grep(pattern: str, mode: str | None = None, **more: Any) -> list[str]:
        extra = {"mode": mode} if mode else {}
        return await chunks(shared_client, "grep", corpus, pattern=pattern, **extra, **more)

    assert await grep("QUICK Brown") == ["a0"]  # a phrase, any case
    assert await grep("quick  brown") == []  # whitespace as typed
    assert await grep("Brown quick", "term") == ["a0", "a2"]  # every token, any order
    assert await grep(r"d.g\b", "regex") == ["a1", "a2"]
    assert await grep("dog", top_k=1) == ["a1"]
    assert await grep("summary", content_type="summary") == ["a0"]
    assert await grep("zebra") == []
    for pattern in (r"(a)\1", "(", "((a{100}){100}){100}", "x" * 1001):
        code = await refused(shared_client, "grep", 400, pattern=pattern, mode="regex")
        assert code == "invalid_retriever"
    fuzzy = await shared_client.post(
        f"{BASE}/grep", json={"source_id": "a", "pattern": "x", "mode": "fuzzy"}
    )
    assert fuzzy.status_code == 422  # not a mode: the SDK's validation error


async def test_get_a_chunk(corpus: Corpus, shared_client: httpx.AsyncClient) -> None:
    resp = await shared_client.get(f"{BASE}/chunks/{corpus.ids['a2']}")
    assert resp.status_code == 200
    (chunk,) = resp.json()["chunks"]
    assert chunk["content"] == "brown dog and quick cat" and chunk["chunk_type"] == "table"
    assert (chunk["start_offset"], chunk["end_offset"], chunk["lang"]) == (36, 59, "en")
    # Another index's chunk, no chunk, no number, past 64 bits.
    for ref in (corpus.ids["x0"], 10**9, "abc", 2**64):
        gone = await shared_client.get(f"{BASE}/chunks/{ref}")
        assert gone.status_code == 404 and gone.json()["code"] == "chunk_not_found"


async def test_an_unknown_source_is_a_404_and_another_workspace_sees_nothing(
    shared_app: FastAPI, corpus: Corpus, shared_client: httpx.AsyncClient
) -> None:
    for op, body in (
        ("navigate", {"start_offset": 0, "end_offset": 1, "direction": "next"}),
        ("read", {}),
        ("grep", {"pattern": "fox"}),
    ):
        for source in ("nope", "a\x00", "s" * 600):
            resp = await shared_client.post(f"{BASE}/{op}", json={"source_id": source, **body})
            assert resp.status_code == 404 and resp.json()["code"] == "source_not_found"
        async with make_client(shared_app, corpus.other.key) as other:
            resp = await other.post(f"{BASE}/{op}", json={"source_id": "a", **body})
        assert resp.status_code == 404 and resp.json()["code"] == "index_not_found"
    async with make_client(shared_app, corpus.other.key) as other:
        resp = await other.get(f"{BASE}/chunks/{corpus.ids['a0']}")
    assert resp.status_code == 404 and resp.json()["code"] == "index_not_found"
