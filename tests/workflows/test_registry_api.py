"""Workflows, registrations and deployments as workers register them and clients read them; the
worker-facing heartbeat; tenancy and hostile input."""

from __future__ import annotations

import uuid

import httpx
import pytest
from fastapi import FastAPI

from tests.support.app_fixtures import create_tenant, make_client
from tests.workflows.plain_worker import register

pytestmark = pytest.mark.both_databases("maestrale.workflows.registry.repository")


def _queue() -> str:
    return f"dep-{uuid.uuid4().hex[:8]}"


async def _beat(
    client: httpx.AsyncClient, queue: str, refs: list[dict[str, str]]
) -> httpx.Response:
    return await client.post(
        "/v1/workflows/workers/heartbeat",
        json={
            "deployment_name": queue,
            "worker_name": "worker-1",
            "workflow_registration_refs": refs,
        },
    )


async def test_registered_workflows_are_listed_and_read(wf_client: httpx.AsyncClient) -> None:
    queue = _queue()
    registered = await register(wf_client, queue)
    again = await register(wf_client, queue)  # idempotent
    assert again["workflow_registration_ids"] == registered["workflow_registration_ids"]

    listed = (await wf_client.get("/v1/workflows", params={"limit": 50})).json()
    by_name = {w["name"]: w for w in listed["workflows"]}
    assert {"echo", "counter"} <= set(by_name) and listed["next_cursor"] is None
    assert by_name["echo"]["display_name"] == "Echo" and by_name["echo"]["archived"] is False

    one = (await wf_client.get("/v1/workflows/echo")).json()["workflow"]
    assert one["active"] is True and one["type"] == "code"
    assert (await wf_client.get(f"/v1/workflows/{one['id']}")).json()["workflow"]["name"] == "echo"
    uuid.UUID(one["customer_id"])
    uuid.UUID(one["workspace_id"])

    regs = (
        await wf_client.get("/v1/workflows/registrations", params={"with_workflow": True})
    ).json()
    assert regs["workflow_registrations"] == regs["workflow_versions"]
    counter = next(r for r in regs["workflow_registrations"] if r["workflow"]["name"] == "counter")
    assert counter["deployment_name"] == queue
    assert counter["definition"]["execution_timeout"] == 3600.0
    assert [s["name"] for s in counter["definition"]["signals"]] == ["add", "finish"]
    got = (await wf_client.get(f"/v1/workflows/registrations/{counter['id']}")).json()
    assert got["workflow_registration"]["active"] is True
    assert got["workflow_registration"] == got["workflow_version"]


async def test_update_and_archive(wf_client: httpx.AsyncClient) -> None:
    await register(wf_client, _queue())
    updated = await wf_client.put(
        "/v1/workflows/echo",
        json={"display_name": "Echo!", "tags": ["a", "b", "a"], "description": "says it back",
              "unknown_field": 1},
    )  # fmt: skip
    assert updated.status_code == 200, updated.text
    assert updated.json()["workflow"]["tags"] == ["a", "b"]
    assert [
        w["name"] for w in (await wf_client.get("/v1/workflows?tags=a&tags=b")).json()["workflows"]
    ] == ["echo"]
    assert (await wf_client.get("/v1/workflows?tags=zzz")).json()["workflows"] == []

    assert (await wf_client.put("/v1/workflows/echo/archive")).json()["workflow"][
        "archived"
    ] is True
    archived = (await wf_client.get("/v1/workflows?archived=true")).json()["workflows"]
    assert [w["name"] for w in archived] == ["echo"]
    refused = await wf_client.post("/v1/workflows/echo/execute", json={})
    assert refused.status_code == 404 and refused.json()["code"] == "WF_1100"
    bulk = await wf_client.put("/v1/workflows/unarchive", json={"workflow_ids": ["echo", "nope"]})
    assert [w["name"] for w in bulk.json()["unarchived"]] == ["echo"]
    assert bulk.json()["errored"][0]["workflow_id"] == "nope"
    bulk = await wf_client.put("/v1/workflows/archive", json={"workflow_ids": ["counter"]})
    assert bulk.json()["archived"][0]["archived"] is True


async def test_deployments_and_worker_liveness(wf_client: httpx.AsyncClient) -> None:
    queue = _queue()
    registered = await register(wf_client, queue)
    refs = [
        {"workflow_id": r["workflow_id"], "workflow_registration_id": r["workflow_registration_id"]}
        for r in registered["workflow_registration_refs"]
    ]
    beat = await _beat(wf_client, queue, refs)
    assert beat.status_code == 200 and beat.json() == {"all_active": True}
    # A registration the platform does not know makes the worker register again: 409, not 404
    # (on a 404 the official worker stops beating).
    unknown = [{"workflow_id": str(uuid.uuid4()), "workflow_version_id": str(uuid.uuid4())}]
    assert (await _beat(wf_client, queue, unknown)).status_code == 409
    assert (await _beat(wf_client, "never-registered", refs)).status_code == 409

    listed = (await wf_client.get("/v1/workflows/deployments")).json()
    mine = next(d for d in listed["deployments"] if d["name"] == queue)
    assert mine["is_active"] and mine["worker_count"] == 1 and mine["active_worker_count"] == 1
    assert listed["next_cursor"] is None and listed["workspace_id"]
    detail = (await wf_client.get(f"/v1/workflows/deployments/{queue}")).json()
    assert [w["name"] for w in detail["workers"]] == ["worker-1"]
    assert detail["workers"][0]["location"]["location_type"] == "local"
    assert (await wf_client.get("/v1/workflows/deployments/nope")).status_code == 404


async def test_two_live_deployments_make_routing_ambiguous(wf_client: httpx.AsyncClient) -> None:
    first, second = _queue(), _queue()
    await register(wf_client, first)
    registered = await register(wf_client, second)
    assert registered["has_conflicts"] is True and registered["warnings"]
    ambiguous = await wf_client.post("/v1/workflows/echo/execute", json={})
    assert ambiguous.status_code == 409
    assert ambiguous.json()["code"] == "AMBIGUOUS_WORKFLOW"
    assert ambiguous.json()["deployments"] == sorted([first, second])
    missing = await wf_client.post("/v1/workflows/echo/execute", json={"deployment_name": "nope"})
    assert missing.status_code == 404


async def test_another_workspace_sees_nothing(
    wf_app: FastAPI, wf_client: httpx.AsyncClient
) -> None:
    queue = _queue()
    registered = await register(wf_client, queue)
    reg_id = registered["workflow_registration_ids"][0]
    other = await create_tenant(wf_app.state.services.db)
    async with make_client(wf_app, other.key) as stranger:
        assert (await stranger.get("/v1/workflows")).json()["workflows"] == []
        assert (await stranger.get("/v1/workflows/echo")).status_code == 404
        assert (await stranger.put("/v1/workflows/echo", json={"tags": ["x"]})).status_code == 404
        assert (await stranger.get(f"/v1/workflows/registrations/{reg_id}")).status_code == 404
        assert (
            await stranger.post(f"/v1/workflows/registrations/{reg_id}/execute", json={})
        ).status_code == 404
        assert (await stranger.get(f"/v1/workflows/deployments/{queue}")).status_code == 404
        assert (await stranger.post("/v1/workflows/echo/execute", json={})).status_code == 404
        refs = [{"workflow_id": registered["workflow_registration_refs"][0]["workflow_id"],
                 "workflow_registration_id": reg_id}]  # fmt: skip
        assert (await _beat(stranger, queue, refs)).status_code == 409
        # The same names registered by the other workspace are its own workflows.
        theirs = await register(stranger, queue)
        assert theirs["workflow_registration_ids"] != registered["workflow_registration_ids"]
    assert (await wf_client.get("/v1/workflows/echo")).json()["workflow"]["tags"] == []


REGISTER = "/v1/workflows/register"


def _spec(**fields: object) -> dict[str, object]:
    return {"name": "ok", "task_queue": "q", "input_schema": {}, **fields}


def _register_body(specs: list[dict[str, object]], deployment: str = "d") -> dict[str, object]:
    return {"definitions": specs, "deployment_name": deployment, "worker_name": "w"}


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        ("get", "/v1/workflows", {"params": {"cursor": "abc"}}, 400),
        ("get", "/v1/workflows", {"params": {"cursor": "9" * 30}}, 400),
        ("get", "/v1/workflows", {"params": {"cursor": "9" * 40}}, 422),
        ("get", "/v1/workflows", {"params": {"limit": 0}}, 422),
        ("get", "/v1/workflows", {"params": {"limit": 2**70}}, 422),
        ("get", "/v1/workflows/registrations", {"params": {"cursor": "99999999999"}}, 400),
        ("get", "/v1/workflows/registrations/not-a-uuid", {}, 404),
        ("post", REGISTER, {"json": _register_body([])}, 422),
        ("post", REGISTER, {"json": _register_body([_spec(name="bad name!")])}, 422),
        ("post", REGISTER, {"json": _register_body([_spec(execution_timeout="P999999D")])}, 422),
        ("post", REGISTER, {"json": _register_body([_spec()], deployment="a/b")}, 422),
        ("post", "/v1/workflows/echo/execute", {"json": {"execution_id": "a b"}}, 422),
        ("post", "/v1/workflows/echo/execute", {"json": {"execution_id": "x" * 257}}, 422),
        ("post", "/v1/workflows/echo/execute", {"json": {"timeout_seconds": -1}}, 422),
        ("put", "/v1/workflows/archive", {"json": {"workflow_ids": ["x"] * 101}}, 422),
        ("get", "/v1/workflows/" + "x" * 5000, {}, 404),
    ],
)  # fmt: skip
async def test_bad_input_is_a_clear_4xx(
    wf_client: httpx.AsyncClient, method: str, path: str, kwargs: dict[str, object], status: int
) -> None:
    response = await getattr(wf_client, method)(path, **kwargs)
    assert response.status_code == status, response.text
    body = response.json()
    assert "detail" in body
    if status != 422:
        assert body["code"].startswith("WF_")
