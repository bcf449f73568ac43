"""Datasets and records: CRUD, soft delete, 1-based pages, payload checks, tenant isolation."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.observability.datasets.tables import Dataset, DatasetRecord
from tests.observability.events_seed import obs_error
from tests.support.app_fixtures import TenantKey, make_client

pytestmark = pytest.mark.both_databases("maestrale.observability.datasets.repository")

DATASETS = "/v1/observability/datasets"
RECORDS = "/v1/observability/dataset-records"


def convo(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def new_dataset(client: httpx.AsyncClient, name: str = "golden") -> dict[str, Any]:
    resp = await client.post(DATASETS, json={"name": name, "description": f"{name} set"})
    assert resp.status_code == 201, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def test_dataset_crud_and_soft_delete(app: FastAPI, client: httpx.AsyncClient) -> None:
    ds = await new_dataset(client)
    assert set(ds) == {
        "id",
        "created_at",
        "updated_at",
        "deleted_at",
        "name",
        "slug",
        "description",
        "owner_id",
        "workspace_id",
    }
    assert ds["deleted_at"] is None and ds["owner_id"]
    resp = await client.get(f"{DATASETS}/{ds['id']}")
    assert resp.json() == ds
    resp = await client.patch(f"{DATASETS}/{ds['id']}", json={"description": "new"})
    assert resp.status_code == 200
    assert resp.json()["description"] == "new" and resp.json()["name"] == "golden"
    assert (await client.delete(f"{DATASETS}/{ds['id']}")).status_code == 204
    obs_error(await client.get(f"{DATASETS}/{ds['id']}"), 404, "DATASET_NOT_FOUND")
    obs_error(await client.delete(f"{DATASETS}/{ds['id']}"), 404, "DATASET_NOT_FOUND")
    resp = await client.get(DATASETS)
    assert resp.json()["datasets"]["count"] == 0
    async with app.state.services.db.transaction() as work:
        row = (await work.session.execute(select(Dataset))).scalar_one()
    assert row.deleted_at is not None  # soft: the row remains


async def test_dataset_list_pages_and_search(client: httpx.AsyncClient) -> None:
    for name in ("alpha", "beta", "gamma", "alphabet"):
        await new_dataset(client, name)
    resp = await client.get(DATASETS, params={"page_size": 3})
    page = resp.json()["datasets"]
    assert page["count"] == 4 and len(page["results"]) == 3
    assert page["previous"] is None and "page=2" in page["next"]
    resp = await client.get(DATASETS, params={"page_size": 3, "page": 2})
    page = resp.json()["datasets"]
    assert [d["name"] for d in page["results"]] == ["alpha"]
    assert page["next"] is None and "page=1" in page["previous"]
    resp = await client.get(DATASETS, params={"q": "ALPHA"})
    assert sorted(d["name"] for d in resp.json()["datasets"]["results"]) == ["alpha", "alphabet"]
    obs_error(await client.get(DATASETS, params={"page": 0}), 400, "VALIDATION_ERROR")
    obs_error(await client.get(DATASETS, params={"page_size": 0}), 400, "VALIDATION_ERROR")
    obs_error(await client.get(DATASETS, params={"page": "x"}), 422, "VALIDATION_ERROR")
    obs_error(await client.post(DATASETS, json={"name": ""}), 422, "VALIDATION_ERROR")


async def test_records_crud_pages_and_bulk_delete(client: httpx.AsyncClient) -> None:
    ds = await new_dataset(client)
    url = f"{DATASETS}/{ds['id']}/records"
    ids = []
    for i in range(3):
        resp = await client.post(url, json={"payload": convo(f"q{i}"), "properties": {"i": i}})
        assert resp.status_code == 201, resp.text
        ids.append(resp.json()["id"])
    record = (await client.get(f"{RECORDS}/{ids[0]}")).json()
    assert record["dataset_id"] == ds["id"] and record["source"] == "DIRECT_INPUT"
    assert record["payload"] == convo("q0") and record["properties"] == {"i": 0}
    page = (await client.get(url, params={"page_size": 2, "page": 2})).json()["records"]
    assert page["count"] == 3 and [r["id"] for r in page["results"]] == [ids[2]]

    resp = await client.put(f"{RECORDS}/{ids[0]}/payload", json={"payload": convo("edited")})
    assert resp.status_code == 204
    resp = await client.put(f"{RECORDS}/{ids[0]}/properties", json={"properties": {"k": "v"}})
    assert resp.status_code == 204
    record = (await client.get(f"{RECORDS}/{ids[0]}")).json()
    assert record["payload"] == convo("edited") and record["properties"] == {"k": "v"}

    bad = {"payload": {"messages": "hi"}}
    obs_error(await client.post(url, json=bad), 400, "DATASET_RECORD_FORMAT_ERROR")
    obs_error(
        await client.put(f"{RECORDS}/{ids[0]}/payload", json={"payload": {"x": 1}}),
        400,
        "DATASET_RECORD_FORMAT_ERROR",
    )
    # Bulk delete is all or nothing.
    resp = await client.post(
        f"{RECORDS}/bulk-delete", json={"dataset_record_ids": [ids[1], "nope"]}
    )
    assert "nope" in obs_error(resp, 404, "DATASET_RECORD_NOT_FOUND")
    assert (await client.get(f"{RECORDS}/{ids[1]}")).status_code == 200
    resp = await client.post(f"{RECORDS}/bulk-delete", json={"dataset_record_ids": ids[1:]})
    assert resp.status_code == 204
    obs_error(await client.get(f"{RECORDS}/{ids[1]}"), 404, "DATASET_RECORD_NOT_FOUND")
    assert (await client.delete(f"{RECORDS}/{ids[0]}")).status_code == 204
    obs_error(await client.delete(f"{RECORDS}/{ids[0]}"), 404, "DATASET_RECORD_NOT_FOUND")
    assert (await client.get(url)).json()["records"]["count"] == 0
    obs_error(
        await client.post(f"{RECORDS}/bulk-delete", json={"dataset_record_ids": []}),
        422,
        "VALIDATION_ERROR",
    )
    obs_error(await client.get(f"{DATASETS}/missing/records"), 404, "DATASET_NOT_FOUND")
    obs_error(
        await client.post(f"{DATASETS}/missing/records", json={"payload": convo("x")}),
        404,
        "DATASET_NOT_FOUND",
    )


async def test_deleting_a_dataset_hides_its_records(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    ds = await new_dataset(client)
    resp = await client.post(f"{DATASETS}/{ds['id']}/records", json={"payload": convo("x")})
    record_id = resp.json()["id"]
    await client.delete(f"{DATASETS}/{ds['id']}")
    obs_error(await client.get(f"{RECORDS}/{record_id}"), 404, "DATASET_RECORD_NOT_FOUND")
    async with app.state.services.db.transaction() as work:
        assert (await work.session.execute(select(DatasetRecord))).scalar_one().id == record_id


async def test_datasets_are_isolated(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    ds = await new_dataset(client)
    resp = await client.post(f"{DATASETS}/{ds['id']}/records", json={"payload": convo("x")})
    record_id = resp.json()["id"]
    async with make_client(app, other.key) as foreign:
        assert (await foreign.get(DATASETS)).json()["datasets"]["count"] == 0
        obs_error(await foreign.get(f"{DATASETS}/{ds['id']}"), 404, "DATASET_NOT_FOUND")
        obs_error(
            await foreign.patch(f"{DATASETS}/{ds['id']}", json={"name": "x"}),
            404,
            "DATASET_NOT_FOUND",
        )
        obs_error(await foreign.delete(f"{DATASETS}/{ds['id']}"), 404, "DATASET_NOT_FOUND")
        obs_error(await foreign.get(f"{DATASETS}/{ds['id']}/records"), 404, "DATASET_NOT_FOUND")
        obs_error(await foreign.get(f"{RECORDS}/{record_id}"), 404, "DATASET_RECORD_NOT_FOUND")
        obs_error(
            await foreign.put(f"{RECORDS}/{record_id}/properties", json={"properties": {}}),
            404,
            "DATASET_RECORD_NOT_FOUND",
        )
        obs_error(
            await foreign.post(f"{RECORDS}/bulk-delete", json={"dataset_record_ids": [record_id]}),
            404,
            "DATASET_RECORD_NOT_FOUND",
        )
    assert (await client.get(f"{RECORDS}/{record_id}")).status_code == 200
