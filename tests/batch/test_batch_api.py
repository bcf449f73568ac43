"""The /v1/batch/jobs group over HTTP: what creation refuses, tenancy, and the list filters."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.core.clock import utcnow
from tests.batch.support import ECHO, chat_line, create_job, input_file
from tests.files.support import upload, user_key
from tests.support.app_fixtures import TenantKey, make_client

pytestmark = pytest.mark.both_databases("maestrale.batch.repository")

REQUEST = {"custom_id": "a", "body": {"messages": [{"role": "user", "content": "hi"}]}}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"endpoint": "/v1/agents/completions"}, 400, "unsupported_endpoint"),
        ({"endpoint": "/v1/nope"}, 400, "unsupported_endpoint"),
        ({"model": "no-such-model"}, 404, "model_not_found"),
        ({"model": "maestrale-embed"}, 400, "model_capability_missing"),
        ({"endpoint": "/v1/ocr"}, 400, "model_capability_missing"),
        ({"endpoint": "/v1/audio/transcriptions"}, 400, "model_capability_missing"),
        ({"model": None}, 400, "invalid_batch_job"),
        ({"model": None, "agent_id": "ag_1"}, 400, "agents_unavailable"),
        (
            {"endpoint": "/v1/conversations", "model": None, "agent_id": "ag_1"},
            404,
            "agent_not_found",
        ),
        ({"endpoint": "/v1/conversations", "agent_id": "ag_1"}, 400, "invalid_batch_job"),
        ({"timeout_hours": 0}, 400, "invalid_batch_job"),
        ({"timeout_hours": 169}, 400, "invalid_batch_job"),
        ({"requests": []}, 400, "invalid_batch_job"),
        ({"input_files": ["00000000-0000-0000-0000-000000000000"]}, 404, "file_not_found"),
    ],
)
async def test_create_refusals(
    client: httpx.AsyncClient, body: dict[str, Any], status: int, code: str
) -> None:
    payload = {"endpoint": "/v1/chat/completions", "model": ECHO, "requests": [REQUEST], **body}
    resp = await client.post("/v1/batch/jobs", json=payload)
    assert resp.status_code == status, resp.text
    assert resp.json()["code"] == code
    assert (await client.get("/v1/batch/jobs")).json()["total"] == 0


async def test_create_validation_and_input_file_rules(client: httpx.AsyncClient) -> None:
    missing_endpoint = await client.post("/v1/batch/jobs", json={"model": ECHO})
    assert missing_endpoint.status_code == 422
    bad_requests = await client.post(
        "/v1/batch/jobs",
        json={"endpoint": "/v1/chat/completions", "model": ECHO, "requests": [{"x": 1}]},
    )
    assert bad_requests.status_code == 422
    pdf = (await upload(client, b"%PDF", "a.pdf", purpose="ocr")).json()["id"]
    not_jsonl = await client.post(
        "/v1/batch/jobs",
        json={"endpoint": "/v1/chat/completions", "model": ECHO, "input_files": [pdf]},
    )
    assert not_jsonl.status_code == 400 and "not a JSONL file" in not_jsonl.json()["message"]
    good = await input_file(client, chat_line("a", "x"))
    twice = await client.post(
        "/v1/batch/jobs",
        json={"endpoint": "/v1/chat/completions", "model": ECHO, "input_files": [good, good]},
    )
    assert twice.status_code == 400
    empty = (await upload(client, b"\n", "empty.jsonl", purpose="batch")).json()["id"]
    nothing = await client.post(
        "/v1/batch/jobs",
        json={"endpoint": "/v1/chat/completions", "model": ECHO, "input_files": [empty]},
    )
    assert nothing.status_code == 400 and "no requests" in nothing.json()["message"]
    unknown_fields = await client.post(
        "/v1/batch/jobs",
        json={"endpoint": "/v1/chat/completions", "model": ECHO, "requests": [REQUEST], "x": 1},
    )
    assert unknown_fields.status_code == 200


async def test_foreign_ids_are_404(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    mine = await create_job(client, requests=[REQUEST])
    my_file = await input_file(client, chat_line("a", "x"))
    async with make_client(app, other.key) as theirs:
        assert (await theirs.get("/v1/batch/jobs")).json()["total"] == 0
        for method, path in [
            ("GET", f"/v1/batch/jobs/{mine['id']}"),
            ("GET", f"/v1/batch/jobs/{mine['id']}?inline=true"),
            ("POST", f"/v1/batch/jobs/{mine['id']}/cancel"),
            ("DELETE", f"/v1/batch/jobs/{mine['id']}"),
        ]:
            resp = await theirs.request(method, path)
            assert resp.status_code == 404, (method, path)
            assert resp.json()["code"] == "batch_job_not_found"
        # Their job cannot read my file.
        resp = await theirs.post(
            "/v1/batch/jobs",
            json={"endpoint": "/v1/chat/completions", "model": ECHO, "input_files": [my_file]},
        )
        assert resp.status_code == 404 and resp.json()["code"] == "file_not_found"
    assert (await client.get(f"/v1/batch/jobs/{mine['id']}")).json()["status"] == "QUEUED"


async def test_list_filters(app: FastAPI, client: httpx.AsyncClient, tenant: Any) -> None:
    first = await create_job(client, requests=[REQUEST], metadata={"team": "a", "env": "prod"})
    second = await create_job(
        client,
        endpoint="/v1/embeddings",
        model="maestrale-embed",
        requests=[{"custom_id": "e", "body": {"input": "x"}}],
        metadata={"team": "b"},
    )
    alice = await user_key(app.state.services.db, tenant, "alice@example.com")
    async with make_client(app, alice) as a:
        third = await create_job(a, requests=[REQUEST], metadata={"team": "a"})
    await client.post(f"/v1/batch/jobs/{second['id']}/cancel")

    async def ids(**params: Any) -> list[str]:
        resp = await client.get("/v1/batch/jobs", params=params)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["object"] == "list" and body["total"] >= len(body["data"])
        return [job["id"] for job in body["data"]]

    assert await ids() == [third["id"], second["id"], first["id"]]
    assert await ids(order_by="created") == [first["id"], second["id"], third["id"]]
    assert await ids(model="maestrale-embed") == [second["id"]]
    assert await ids(team="a") == [third["id"], first["id"]]  # the SDK's exploded metadata
    assert await ids(team="a", env="prod") == [first["id"]]
    assert await ids(metadata='{"team": "b"}') == [second["id"]]
    assert await ids(metadata="~?~unset~?~sentinel~?~") == [third["id"], second["id"], first["id"]]
    assert await ids(status="CANCELLED") == [second["id"]]
    multi = await client.get("/v1/batch/jobs", params=[("status", "QUEUED"), ("status", "RUNNING")])
    assert [j["id"] for j in multi.json()["data"]] == [third["id"], first["id"]]
    assert await ids(created_by_me="true") == [second["id"], first["id"]]
    future = (utcnow() + timedelta(hours=1)).isoformat()
    assert await ids(created_after=future) == []
    page = (await client.get("/v1/batch/jobs", params={"page": 1, "page_size": 2})).json()
    assert [j["id"] for j in page["data"]] == [first["id"]] and page["total"] == 3
    assert (await client.get("/v1/batch/jobs", params={"status": "DONE"})).status_code == 400
    assert (await client.get("/v1/batch/jobs", params={"order_by": "name"})).status_code == 422
    bad_date = await client.get("/v1/batch/jobs", params={"created_after": "yesterday"})
    assert bad_date.status_code == 422
