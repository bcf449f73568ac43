"""Documents into an index and out of it over HTTP: a mix of accepted and rejected documents
(each with its field errors), chunk attributes and field defaults as stored, a source id
re-ingested replacing its chunks, vectors the caller sends (custom embeddings), documents too
big or too many refused with nothing written, a schema update applied while the index serves,
and deletion by ids."""

from __future__ import annotations

import httpx
import numpy as np
from fastapi import FastAPI

from tests.search_indexes.indexes_support import BASE, ingest, ready, run_jobs, stored

SCHEMA = {
    "document_fields": {
        "title": {"type": "text", "required": True},
        "year": {"type": "int"},
        "tags": {"type": "keyword[]"},
    },
    "chunk_fields": {"section": {"type": "keyword", "default": "body"}},
}
VECTOR_SCHEMA = {"chunk_fields": {"vec": {"type": "dense_vector"}}}
CUSTOM = {"type": "custom", "name": "mine", "dimensions": 3}


def errors_of(result: dict[str, object]) -> list[tuple[list[object], str]]:
    return [(e["location"], e["type"]) for e in result["errors"]]  # type: ignore[attr-defined]


async def test_a_mix_of_documents_then_a_replacement_and_a_deletion(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    index = await ready(app, client, "notes", schema=SCHEMA)
    long_text = "\n\n".join(
        f"Paragraph {i} about the harbour and its quays." * 30 for i in range(6)
    )
    body = await ingest(
        client,
        "notes",
        [
            {"id": "a", "title": "A", "year": 2024, "content": long_text, "metadata": {"k": 1}},
            {"content": "no title"},
            {"id": "c", "title": "C", "content": "x", "chunks": [{"content": "y"}]},
            {
                "id": "d",
                "title": "D",
                "year": "1999",
                "colour": "red",
                "tags": ["ok", 3],
                "content": "typed",
            },
            {
                "source_id": "e",
                "title": "E",
                "chunks": [
                    {"content": "Intro", "locator": "p=1", "metadata": {"h": "1"}},
                    {
                        "content": "More",
                        "chunk_type": "table",
                        "parent_ref": "p=1",
                        "section": "annex",
                        "start_offset": 10,
                    },
                ],
            },
        ],
    )
    assert (body["accepted"], body["rejected"]) == (2, 3)
    results = body["results"]
    assert [r["position"] for r in results] == [0, 1, 2, 3, 4]
    assert results[0]["status"] == "accepted" and results[0]["document_id"] == "a"
    assert results[0]["chunk_count"] > 1
    assert errors_of(results[1]) == [(["title"], "missing")]
    assert errors_of(results[2]) == [([], "value_error")]
    assert sorted(errors_of(results[3])) == [
        (["colour"], "extra_forbidden"),
        (["tags", 1], "string_type"),
        (["year"], "int_type"),
    ]
    assert results[4] == {"status": "accepted", "position": 4, "document_id": "e", "chunk_count": 2}

    row, docs, chunks = await stored(app, index["id"])
    assert [d.source_id for d in docs] == ["a", "e"]
    assert docs[0].fields == {"title": "A", "year": 2024, "metadata": {"k": 1}}
    a_chunks = [c for c in chunks if c.document_id == docs[0].id]
    assert (row.document_count, row.chunk_count) == (2, len(a_chunks) + 2)
    first = a_chunks[0]
    assert first.model == "maestrale-embed" and first.page == 1
    assert long_text[first.start_offset : first.end_offset] == first.text
    assert first.attributes == {
        "locator": f"chars={first.start_offset}-{first.end_offset}",
        "chunk_type": "text",
        "parent_ref": None,
        "metadata": {},
        "fields": {"section": "body"},
    }
    e_chunks = [c for c in chunks if c.document_id == docs[1].id]
    assert [(c.start_offset, c.end_offset) for c in e_chunks] == [(0, 5), (10, 14)]
    assert e_chunks[1].attributes == {
        "locator": "chars=10-14",
        "chunk_type": "table",
        "parent_ref": "p=1",
        "metadata": {},
        "fields": {"section": "annex"},
    }
    assert e_chunks[0].attributes["locator"] == "p=1"

    again = await ingest(client, "notes", [{"id": "a", "title": "A2", "content": "Short now."}])
    assert again["results"][0]["chunk_count"] == 1
    row, docs, chunks = await stored(app, index["id"])
    assert (row.document_count, row.chunk_count, len(chunks)) == (2, 3, 3)
    assert docs[0].fields == {"title": "A2"} and docs[0].length == len("Short now.")

    path = f"{BASE}/notes/documents"
    deleted = await client.request("DELETE", path, json={"document_ids": ["e", "zz", "e"]})
    assert deleted.json() == {"deleted_document_ids": ["e"], "missing": ["zz"]}
    row, docs, chunks = await stored(app, index["id"])
    assert (row.document_count, row.chunk_count, len(chunks)) == (1, 1, 1)


async def test_custom_vectors(app: FastAPI, client: httpx.AsyncClient) -> None:
    index = await ready(app, client, "vectors", embedding=CUSTOM, schema=VECTOR_SCHEMA)
    body = await ingest(
        client,
        "vectors",
        [
            {"id": "ok", "chunks": [{"content": "one", "vec": [3, 0, 4]}]},
            {"chunks": [{"content": "none"}]},
            {"chunks": [{"content": "short", "vec": [1, 2]}]},
            {"chunks": [{"content": "zero", "vec": [0, 0, 0]}]},
            {"content": "text needs a model"},
        ],
    )
    assert [r["status"] for r in body["results"]] == ["accepted"] + ["rejected"] * 4
    assert [errors_of(r) for r in body["results"][1:]] == [
        [(["chunks", 0, "vec"], "missing")],
        [(["chunks", 0, "vec"], "vector_dimension")],
        [(["chunks", 0, "vec"], "vector_zero")],
        [(["content"], "value_error")],
    ]
    _, _, chunks = await stored(app, index["id"])
    assert len(chunks) == 1 and chunks[0].model == f"custom:{index['id']}"
    assert np.allclose(np.frombuffer(chunks[0].vector, dtype=np.float32), [0.6, 0, 0.8])
    assert chunks[0].attributes["fields"] == {}  # the vector is not a field


async def test_too_big_or_too_many_documents_write_nothing(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    index = await ready(app, client, "big")
    big = "a" * (8 * 1024 * 1024 + 1)
    body = await ingest(client, "big", [{"id": "big", "content": big}])
    assert errors_of(body["results"][0]) == [(["content"], "too_long")]
    many = await client.post(f"{BASE}/big/documents", json={"documents": [{}] * 1001})
    assert many.status_code == 400 and many.json()["code"] == "too_many_documents"
    row, docs, chunks = await stored(app, index["id"])
    assert (row.document_count, row.chunk_count, docs, chunks) == (0, 0, [], [])


async def test_a_schema_update_applies_while_the_index_serves(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    index = await ready(app, client, "grows", schema={"document_fields": {}})
    await ingest(client, "grows", [{"id": "old", "content": "Before the update."}])
    schema = {
        "document_fields": {"lang": {"type": "keyword", "default": "en"}},
        "chunk_fields": {"score": {"type": "float", "default": 0.5}},
    }
    put = await client.put(f"{BASE}/grows", json={"schema": schema})
    assert put.status_code == 202
    # Provisioning the update, it serves, and new documents follow the new schema already.
    during = await ingest(client, "grows", [{"id": "new", "content": "During.", "lang": "it"}])
    assert during["accepted"] == 1
    await run_jobs(app)
    row, docs, chunks = await stored(app, index["id"])
    assert row.status == "ready" and row.schema["document_fields"]["lang"]["default"] == "en"
    assert {d.source_id: d.fields for d in docs} == {"new": {"lang": "it"}, "old": {"lang": "en"}}
    assert [c.attributes["fields"] for c in chunks] == [{"score": 0.5}] * 2
