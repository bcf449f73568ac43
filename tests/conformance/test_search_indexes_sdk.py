"""mistralai 3.x drives the 15 operations of `beta.context.search_indexes` against a live
server: the index and document operations (create, list, get, update, delete, ingest_documents,
delete_documents), retrieval (search, navigate, read, grep, get_chunk, over custom vectors
ingested through the API) and the summary field (get, set, and generate streamed as the SDK's
SummaryMetadata then SummaryChunk events); every answer parses into the SDK's own models, and its
errors are the SDK's 4xx."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.conformance.conftest import LiveServer
from tests.support.sdks import NEWEST_3, SdkProcess

pytestmark = pytest.mark.sdk3_group

GROUP = "beta.context.search_indexes"
EMBEDDING = {"type": "mistral", "name": "maestrale-embed", "dimensions": 1024}
SCHEMA = {
    "document_fields": {"year": {"type": "int"}},
    "chunk_fields": {
        "vec": {"type": "dense_vector"},
        "lang": {"type": "keyword"},
        "summary": {"type": "text"},
    },
}
CHUNKS = [
    {"content": "the quick brown fox", "vec": [1, 0, 0], "lang": "en", "summary": "A fox"},
    {"content": "lazy dog sleeps", "vec": [0, 1, 0], "lang": "fr"},
    {"content": "brown dog and quick cat", "vec": [0.7, 0.7, 0], "lang": "en"},
]


@pytest.fixture(scope="module")
def sdk3(live_server: LiveServer) -> Iterator[SdkProcess]:
    sdk = SdkProcess(NEWEST_3, live_server.url, live_server.api_key)
    yield sdk
    sdk.close()


def caller(sdk3: SdkProcess) -> Callable[..., Any]:
    def ok(operation: str, **kwargs: object) -> Any:
        return sdk3.call(f"{GROUP}.{operation}", **kwargs).ok()

    return ok


def settled(sdk3: SdkProcess, name: str) -> dict[str, Any]:
    """The index once its job has run (the live server's worker runs it at once)."""
    deadline = time.monotonic() + 30
    while True:
        got: dict[str, Any] = caller(sdk3)("get", index_name=name)
        if got["status"] != "provisioning" or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_an_index_through_every_operation(sdk3: SdkProcess) -> None:
    ok = caller(sdk3)

    name = f"sdk-{uuid.uuid4().hex[:8]}"
    schema = {"document_fields": {"title": {"type": "text", "required": True}}}
    created = ok("create", name=name, config={"embedding": EMBEDDING}, schema=schema)
    assert created["result"]["status"] == "provisioning"
    assert created["headers"]["location"] == [f"/v1/context/search-indexes/{name}"]
    assert settled(sdk3, name)["status"] == "ready"

    listed = ok("list", page_size=1, name=name.upper())
    assert [i["name"] for i in listed["result"]["data"]] == [name]

    ingested = ok(
        "ingest_documents",
        index_name=name,
        documents=[
            {"id": "a", "title": "Harbour", "content": "The northern quay opened in April."},
            {"id": "b", "content": "No title."},
        ],
    )
    assert (ingested["accepted"], ingested["rejected"]) == (1, 1)
    assert ingested["results"][0]["document_id"] == "a"
    assert ingested["results"][1]["errors"][0]["location"] == ["title"]

    added = {**schema["document_fields"], "year": {"type": "int", "default": 2024}}
    updated = ok("update", index_name=name, schema={"document_fields": added})
    assert updated["status"] == "provisioning"
    assert settled(sdk3, name)["schema"]["document_fields"]["year"]["default"] == 2024
    refused = sdk3.call(f"{GROUP}.update", index_name=name, schema={"document_fields": {}})
    assert refused.status == 422

    assert ok("delete_documents", index_name=name, document_ids=["a", "z"]) == {
        "deleted_document_ids": ["a"],
        "missing": ["z"],
    }
    assert ok("delete", index_name=name) == {
        "id": created["result"]["id"],
        "name": name,
        "status": "deleting",
    }
    assert sdk3.call(f"{GROUP}.get", index_name=name).status == 404


def test_reading_an_index_through_every_operation(sdk3: SdkProcess) -> None:
    ok = caller(sdk3)
    name = f"sdk-read-{uuid.uuid4().hex[:8]}"
    embedding = {"type": "custom", "name": "mine", "dimensions": 3}
    ok("create", name=name, config={"embedding": embedding}, schema=SCHEMA)
    assert settled(sdk3, name)["status"] == "ready"
    document = {"id": "a", "year": 2020, "chunks": CHUNKS}
    assert ok("ingest_documents", index_name=name, documents=[document])["accepted"] == 1

    def contents(chunks: list[dict[str, Any]]) -> list[str]:
        return [chunk["content"] for chunk in chunks]

    def search(retriever: dict[str, Any]) -> list[dict[str, Any]]:
        hits: list[dict[str, Any]] = ok("search", index_name=name, retriever=retriever)["hits"]
        assert all(hit["index_name"] == name for hit in hits)
        return hits

    near = search({"type": "nearest_neighbour", "query_embedding": [1, 0, 0], "top_k": 2})
    assert contents([hit["chunk"] for hit in near]) == [CHUNKS[0]["content"], CHUNKS[2]["content"]]
    first = near[0]["chunk"]
    assert near[0]["score"] == pytest.approx(1.0, abs=1e-5) and first["source_id"] == "a"
    assert (first["lang"], first["summary"], first["chunk_type"]) == ("en", "A fox", "text")
    every = search({"type": "keyword", "query": "dog quick", "operator": "and"})
    assert contents([hit["chunk"] for hit in every]) == [CHUNKS[2]["content"]]
    french = {"type": "equal", "field": "lang", "value": "fr"}
    fused = search(
        {
            "type": "rrf",
            "retrievers": [
                {"type": "nearest_neighbour", "query_embedding": [1, 0, 0]},
                {"type": "keyword", "query": "dog"},
            ],
            "filter": french,
        }
    )
    assert contents([hit["chunk"] for hit in fused]) == [CHUNKS[1]["content"]]

    source = {"index_name": name, "source_id": "a"}
    read = ok("read", **source)["chunks"]
    assert contents(read) == [chunk["content"] for chunk in CHUNKS]
    after = ok(
        "navigate",
        **source,
        start_offset=read[0]["start_offset"],
        end_offset=read[0]["end_offset"],
        direction="next",
    )
    assert contents(after["chunks"]) == [CHUNKS[1]["content"]]
    assert contents(ok("grep", **source, pattern="LAZY dog")["chunks"]) == [CHUNKS[1]["content"]]
    summaries = ok("grep", **source, pattern="fox", content_type="summary", mode="term")
    assert contents(summaries["chunks"]) == ["A fox"]
    got = ok("get_chunk", index_name=name, chunk_id=first["id"])["chunks"]
    assert got[0]["id"] == first["id"] and got[0]["content"] == CHUNKS[0]["content"]

    missing = sdk3.call(f"{GROUP}.read", index_name=name, source_id="nope")
    assert missing.status == 404
    bad = sdk3.call(
        f"{GROUP}.search", index_name=name, retriever={"type": "keyword", "query": "x", "top_k": 0}
    )
    assert bad.status == 400


def test_a_summary_field_through_its_operations(sdk3: SdkProcess) -> None:
    ok = caller(sdk3)
    name = f"sdk-summary-{uuid.uuid4().hex[:8]}"
    ok("create", name=name, config={"embedding": EMBEDDING})
    assert settled(sdk3, name)["status"] == "ready"

    missing = sdk3.call(f"{GROUP}.get_index_summary", index_name=name, language="en")
    assert missing.status == 404

    summary = {"content": "Notes on the harbour.", "status": "handwritten", "translated": False}
    assert ok("set_index_summary", index_name=name, language="en", **summary) == summary
    assert ok("get_index_summary", index_name=name, language="en") == summary

    streamed = sdk3.call(f"{GROUP}.generate_index_summary", index_name=name, language="en")
    assert streamed.ok() == [
        {"status": "handwritten", "translated": False},
        {"content": "Notes on the harbour."},
    ]
    assert {"SummaryMetadata", "SummaryChunk"} <= set(streamed.types)
