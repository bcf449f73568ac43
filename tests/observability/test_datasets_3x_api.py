"""What mistralai 3.x added to datasets: a slug per dataset (required in 3.x), a record's
declared `source`, an import task's counts (`result`), and the span import's refusals."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.observability.datasets.repository import DatasetRepository
from maestrale.observability.datasets.slugs import slug_of
from maestrale.observability.datasets.tables import DatasetImportTask
from tests.batch.support import run_jobs
from tests.observability.events_seed import obs_error
from tests.observability.test_dataset_imports_api import add_record, start_import, task_of
from tests.observability.test_datasets_api import convo, new_dataset
from tests.support.app_fixtures import TenantKey, make_client

pytestmark = pytest.mark.both_databases("maestrale.observability.datasets.repository")

DATASETS = "/v1/observability/datasets"
SPANS_BODY = {
    "span_references": [{"trace_id": "t1", "span_id": "s1"}],
    "mapping_contract": {
        "version": 1,
        "mappings": [
            {
                "target_field": "messages",
                "source_field": {"namespace": "span_attributes", "key": "gen_ai.prompt"},
            }
        ],
    },
}


def test_slug_of_a_name() -> None:
    assert slug_of("Customer support: Q3!") == "customer-support-q3"
    assert slug_of("Évaluation — été") == "evaluation-ete"
    assert slug_of("???") == "dataset"
    assert len(slug_of("x" * 500)) == 100


async def test_slugs_are_unique_per_workspace_and_kept(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    first = await new_dataset(client, "Golden set")
    second = await new_dataset(client, "golden  SET")
    assert (first["slug"], second["slug"]) == ("golden-set", "golden-set-2")
    # A deleted dataset keeps its slug: a new one does not take it.
    assert (await client.delete(f"{DATASETS}/{second['id']}")).status_code == 204
    assert (await new_dataset(client, "Golden set"))["slug"] == "golden-set-3"
    renamed = await client.patch(f"{DATASETS}/{first['id']}", json={"name": "Other"})
    assert renamed.json()["slug"] == "golden-set"
    listed = (await client.get(DATASETS)).json()["datasets"]["results"]
    assert {d["slug"] for d in listed} == {"golden-set", "golden-set-3"}
    async with make_client(app, other.key) as foreign:
        created = await foreign.post(DATASETS, json={"name": "Golden set", "description": ""})
        assert created.json()["slug"] == "golden-set"


async def test_a_slug_taken_meanwhile_makes_the_next(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another request took the slug between the look-up and the insert: the unique constraint
    refuses it and the creation takes the next free one."""
    await new_dataset(client, "race")
    real = DatasetRepository.slugs_from
    calls: list[str] = []

    async def stale(self: DatasetRepository, base: str) -> set[str]:
        calls.append(base)
        return set() if len(calls) == 1 else await real(self, base)

    monkeypatch.setattr(DatasetRepository, "slugs_from", stale)
    assert (await new_dataset(client, "race"))["slug"] == "race-2"
    assert calls == ["race", "race"]


async def test_record_source_and_import_counts(app: FastAPI, client: httpx.AsyncClient) -> None:
    ds = await new_dataset(client)
    span = await client.post(
        f"{DATASETS}/{ds['id']}/records",
        json={"payload": convo("from a span"), "source": "TELEMETRY_SPAN"},
    )
    assert span.status_code == 201 and span.json()["source"] == "TELEMETRY_SPAN"
    obs_error(
        await client.post(
            f"{DATASETS}/{ds['id']}/records", json={"payload": convo("x"), "source": "EXPLORER"}
        ),
        422,
        "VALIDATION_ERROR",
    )
    kept = [await add_record(client, ds["id"], f"q{i}") for i in range(3)]
    target = await new_dataset(client, "target")
    task = await start_import(client, target["id"], "dataset", dataset_record_ids=kept)
    assert task["result"] is None
    # Deleted after the request, before the job: skipped, and counted so.
    assert (await client.delete(f"/v1/observability/dataset-records/{kept[1]}")).status_code == 204
    await run_jobs(app)
    done = await task_of(client, target["id"], task["id"])
    assert done["status"] == "COMPLETED"
    assert done["result"] == {
        "requested_record_count": 3,
        "imported_record_count": 2,
        "skipped_record_count": 1,
    }


async def test_span_import_refusals(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    # (The import itself: tests/observability/test_dataset_span_import.py.)
    ds = await new_dataset(client)
    url = f"{DATASETS}/{ds['id']}/imports/from-spans"
    message = obs_error(await client.post(url, json=SPANS_BODY), 404, "SPAN_NOT_FOUND")
    assert "t1:s1" in message
    obs_error(
        await client.post(f"{DATASETS}/nope/imports/from-spans", json=SPANS_BODY),
        404,
        "DATASET_NOT_FOUND",
    )
    for bad in (
        {**SPANS_BODY, "span_references": []},
        {**SPANS_BODY, "mapping_contract": {"version": 2, "mappings": []}},
        {"span_references": [{"trace_id": "t"}], "mapping_contract": {"mappings": []}},
    ):
        obs_error(await client.post(url, json=bad), 422, "VALIDATION_ERROR")
    async with make_client(app, other.key) as foreign:
        obs_error(await foreign.post(url, json=SPANS_BODY), 404, "DATASET_NOT_FOUND")
    async with app.state.services.db.transaction() as work:
        assert (await work.session.execute(select(DatasetImportTask))).first() is None
