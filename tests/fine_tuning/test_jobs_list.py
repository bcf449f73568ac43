"""The list of fine-tuning jobs (filters, paging, bounds) and tenancy: another workspace sees
none of the jobs and gets 404 on each."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from tests.files.support import user_key
from tests.fine_tuning.support import (
    chat_lines,
    classifier_body,
    classifier_lines,
    completion_body,
    create_job,
    data_file,
)
from tests.support.app_fixtures import TenantKey, make_client

pytestmark = pytest.mark.both_databases("maestrale.fine_tuning.repository")

JOBS = "/v1/fine_tuning/jobs"


async def listed(client: httpx.AsyncClient, **params: Any) -> list[str]:
    resp = await client.get(JOBS, params=params)
    assert resp.status_code == 200, resp.text
    return [job["id"] for job in resp.json()["data"]]


async def test_filters_and_paging(app: FastAPI, client: httpx.AsyncClient, tenant: Tenant) -> None:
    chat = await data_file(client, chat_lines(4))
    first = await create_job(client, completion_body(chat, suffix="one"))
    second = await create_job(client, completion_body(chat, suffix="two", auto_start=False))
    classes = await data_file(client, classifier_lines(4))
    third = await create_job(client, classifier_body(classes))
    async with make_client(app, await user_key(app.state.services.db, tenant, "b@x")) as bob:
        bobs = await create_job(bob, completion_body(chat, model="tiny"))

    everything = await client.get(JOBS)
    body = everything.json()
    assert body["object"] == "list" and body["total"] == 4
    assert [job["id"] for job in body["data"]] == [
        bobs["id"],
        third["id"],
        second["id"],
        first["id"],
    ]
    assert {job["job_type"] for job in body["data"]} == {"completion", "classifier"}
    assert all("events" not in job for job in body["data"])

    assert await listed(client, status="VALIDATED") == [second["id"]]
    assert await listed(client, status="QUEUED") == [bobs["id"], third["id"], first["id"]]
    assert await listed(client, model="tiny-classifier") == [third["id"]]
    assert await listed(client, model="tiny") == [bobs["id"]]
    assert await listed(client, model="tiny-chat") == [bobs["id"], second["id"], first["id"]]
    assert await listed(client, suffix="two") == [second["id"]]
    assert await listed(client, created_by_me=True) == [third["id"], second["id"], first["id"]]
    assert await listed(client, wandb_project="p") == []
    assert await listed(client, wandb_name="n") == []
    later = (utcnow() + timedelta(hours=1)).isoformat()
    earlier = (utcnow() - timedelta(hours=1)).isoformat()
    assert await listed(client, created_after=later) == []
    assert len(await listed(client, created_after=earlier)) == 4
    assert await listed(client, created_before=earlier) == []
    assert len(await listed(client, created_before=later)) == 4

    page = (await client.get(JOBS, params={"page": 1, "page_size": 3})).json()
    assert page["total"] == 4 and [job["id"] for job in page["data"]] == [first["id"]]
    assert (await client.get(JOBS, params={"page": 2**40, "page_size": 1000})).json()["data"] == []


@pytest.mark.parametrize(
    "params",
    [
        {"page": -1},
        {"page_size": 0},
        {"page_size": 1001},
        {"page": 2**62, "page_size": 1000},
        {"page": 2**63},
        {"page": 2**64},
        {"page_size": 2**70},
        {"status": "DONE"},
        {"created_after": "yesterday"},
        {"created_after": "0001-01-01T00:00:00+14:00"},
        {"created_before": "9999-12-31T23:59:59-14:00"},
        {"created_by_me": "perhaps"},
        {"model": "m" * 300},
    ],
)
async def test_list_bounds(client: httpx.AsyncClient, params: dict[str, Any]) -> None:
    resp = await client.get(JOBS, params=params)
    assert resp.status_code in (400, 422), resp.text
    assert resp.json()


async def test_another_workspace_gets_404(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    mine = await create_job(client, completion_body(await data_file(client, chat_lines(2))))
    waiting = await create_job(
        client, completion_body(await data_file(client, chat_lines(2)), auto_start=False)
    )
    async with make_client(app, other.key) as theirs:
        assert (await theirs.get(JOBS)).json() == {"object": "list", "data": [], "total": 0}
        for job in (mine, waiting):
            for method, path in (
                ("GET", f"{JOBS}/{job['id']}"),
                ("POST", f"{JOBS}/{job['id']}/cancel"),
                ("POST", f"{JOBS}/{job['id']}/start"),
            ):
                resp = await theirs.request(method, path)
                assert resp.status_code == 404, resp.text
                assert resp.json()["code"] == "fine_tuning_job_not_found"
    assert (await client.get(f"{JOBS}/{mine['id']}")).json()["status"] == "QUEUED"
    assert (await client.get(f"{JOBS}/{waiting['id']}")).json()["status"] == "VALIDATED"


async def test_unknown_ids(client: httpx.AsyncClient) -> None:
    for job_id in ("nope", "x" * 5000, "00000000-0000-0000-0000-000000000000"):
        resp = await client.get(f"{JOBS}/{job_id}")
        assert resp.status_code == 404, resp.text
    assert (await client.get(f"{JOBS}/%00")).status_code == 400


async def test_dates_at_the_ends_of_the_range(client: httpx.AsyncClient) -> None:
    await create_job(client, completion_body(await data_file(client, chat_lines(2))))
    assert len(await listed(client, created_after="0001-01-01T00:00:00")) == 1
    assert len(await listed(client, created_before="9999-12-31T23:59:59Z")) == 1
    assert await listed(client, created_before="0001-01-01T00:00:00Z") == []
