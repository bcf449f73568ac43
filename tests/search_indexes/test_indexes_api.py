"""Search indexes over HTTP: an index's life (provisioned by its job, its schema updated by
addition only, deleted by its job), provisioning that fails with why, refused creations,
the list's cursor and filters, and another workspace's indexes out of reach."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from tests.search_indexes.indexes_support import (
    BASE,
    EMBED,
    create,
    ingest,
    ready,
    run_jobs,
    stored,
)
from tests.support.app_fixtures import TenantKey, make_client

SCHEMA = {"document_fields": {"title": {"type": "text", "required": True}}}


async def test_an_index_from_create_to_delete(app: FastAPI, client: httpx.AsyncClient) -> None:
    created = await create(client, "Docs_v1.0", schema=SCHEMA)
    assert created["status"] == "provisioning" and created["name"] == "Docs_v1.0"
    assert created["schema"] == {
        "document_fields": {
            "title": {"type": "text", "indexed": True, "required": True, "system": False}
        },
        "chunk_fields": {},
    }
    assert created["config"] == {"embedding": EMBED} and created["creator_id"]
    await run_jobs(app)
    path = f"{BASE}/Docs_v1.0"
    got = (await client.get(path)).json()
    assert got["status"] == "ready" and got["status_message"] is None
    row, _, _ = await stored(app, got["id"])
    assert row.embedding_model == "maestrale-embed" and row.dimension == 1024

    # Only additions: a field kept with its type; a field newly required has a default.
    fields = {"title": {"type": "keyword"}}
    for document_fields, reason in (
        ({}, "cannot be removed"),
        (fields, "type cannot change"),
        ({**SCHEMA["document_fields"], "lang": {"type": "keyword", "required": True}}, "default"),
    ):
        refused = await client.put(path, json={"schema": {"document_fields": document_fields}})
        assert refused.status_code == 422 and reason in refused.text, refused.text
    added = {**SCHEMA["document_fields"], "lang": {"type": "keyword", "default": "en"}}
    updated = await client.put(path, json={"schema": {"document_fields": added}})
    assert updated.status_code == 202, updated.text
    assert updated.json()["status"] == "provisioning"
    assert updated.json()["schema"]["document_fields"]["lang"]["default"] == "en"
    busy = await client.put(path, json={"schema": {"document_fields": added}})
    assert busy.status_code == 409 and busy.json()["code"] == "index_not_ready"
    await run_jobs(app)
    row, _, _ = await stored(app, got["id"])
    assert (
        row.status == "ready"
        and row.pending_schema is None
        and "lang" in row.schema["document_fields"]
    )

    deleted = await client.delete(path)
    assert deleted.status_code == 202
    assert deleted.json() == {"id": got["id"], "name": "Docs_v1.0", "status": "deleting"}
    gone = await client.get(path)
    assert gone.status_code == 404 and gone.json()["code"] == "index_not_found"
    assert (await client.delete(path)).status_code == 404
    await run_jobs(app)
    assert (await stored(app, got["id"]))[0] is None
    await create(client, "Docs_v1.0")  # the name is free again


async def test_provisioning_fails_with_why(app: FastAPI, client: httpx.AsyncClient) -> None:
    cases = {
        "unserved": ({**EMBED, "name": "no-such-model"}, "is not served"),
        "chat": ({**EMBED, "name": "maestrale-echo"}, "does not serve embeddings"),
        "narrow": ({**EMBED, "dimensions": 384}, "embeds in 1024 dimensions, not the 384"),
    }
    for name, (embedding, _) in cases.items():
        await create(client, name, embedding)
    await run_jobs(app)
    for name, (_, reason) in cases.items():
        got = (await client.get(f"{BASE}/{name}")).json()
        assert got["status"] == "failed" and reason in got["status_message"], got
    refused = await client.post(f"{BASE}/narrow/documents", json={"documents": []})
    assert refused.status_code == 409 and refused.json()["code"] == "index_not_ready"


async def test_refused_creations(client: httpx.AsyncClient) -> None:
    def body(**over: object) -> dict[str, object]:
        return {"name": "ok", "config": {"embedding": EMBED}, **over}

    for bad in (
        body(name="has space"),
        body(name="x" * 129),
        body(config={"embedding": {**EMBED, "distance_metric": "l2"}}),
        body(config={"embedding": {**EMBED, "dimensions": 0}}),
        body(schema={"chunk_fields": {"f": {"type": "vector"}}}),
    ):
        assert (await client.post(BASE, json=bad)).status_code == 422, bad
    l2 = await client.post(
        BASE, json=body(config={"embedding": {**EMBED, "distance_metric": "l2"}})
    )
    assert "ranks by cosine" in l2.text
    custom = {"embedding": {**EMBED, "type": "custom"}}
    vector = {"type": "dense_vector"}
    for bad, reason in (
        (body(config=custom), "need a dense_vector chunk field"),
        (body(schema={"document_fields": {"v": vector}}), "dense vectors are chunk fields"),
        (body(schema={"chunk_fields": {"a": vector, "b": vector}}), "at most one"),
        (body(schema={"chunk_fields": {"content": {"type": "text"}}}), "a key of its own"),
        (body(schema={"document_fields": {"n": {"type": "int", "default": "x"}}}), "not a int"),
    ):
        resp = await client.post(BASE, json=bad)
        assert resp.status_code == 400 and reason in resp.json()["message"], resp.text
    await create(client, "ok", {**EMBED, "dtype": "float16", "distance_metric": "inner_product"})
    taken = await client.post(BASE, json=body())
    assert taken.status_code == 409 and taken.json()["code"] == "name_taken"


async def test_list_pages_and_filters(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    for name in ("alpha", "Beta", "gamma-beta"):
        await create(client, name)
    async with make_client(app, other.key) as theirs:
        await create(theirs, "beta-theirs")
    first = (await client.get(BASE, params={"page_size": 2})).json()
    assert [i["name"] for i in first["data"]] == ["gamma-beta", "Beta"]
    rest = (await client.get(BASE, params={"page_token": first["next_page_token"]})).json()
    assert [i["name"] for i in rest["data"]] == ["alpha"] and rest["next_page_token"] is None
    named = (await client.get(BASE, params={"name": "BETA"})).json()
    assert [i["name"] for i in named["data"]] == ["gamma-beta", "Beta"]
    creator = first["data"][0]["creator_id"]
    assert len((await client.get(BASE, params={"creator_id": creator})).json()["data"]) == 3
    assert (await client.get(BASE, params={"creator_id": "nobody"})).json()["data"] == []
    assert (await client.get(BASE, params={"status": "ready"})).json()["data"] == []
    forged = await client.get(BASE, params={"page_token": "eyJ0IjoxfQ"})
    assert forged.status_code == 400 and forged.json()["code"] == "invalid_page_token"
    assert (await client.get(BASE, params={"page_size": 101})).status_code == 422


async def test_another_workspace_gets_404(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    await ready(app, client, "mine")
    path = f"{BASE}/mine"
    async with make_client(app, other.key) as theirs:
        for resp in (
            await theirs.get(path),
            await theirs.put(path, json={"schema": {}}),
            await theirs.delete(path),
            await theirs.post(f"{path}/documents", json={"documents": [{"content": "x"}]}),
            await theirs.request("DELETE", f"{path}/documents", json={"document_ids": ["a"]}),
        ):
            assert resp.status_code == 404, resp.text
        assert (await theirs.get(BASE)).json()["data"] == []
    assert (await ingest(client, "mine", [{"content": "still mine"}]))["accepted"] == 1
