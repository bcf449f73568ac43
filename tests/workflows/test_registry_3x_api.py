"""What mistralai 3.x added around workflows and deployments, served from the registry and the
execution index (no Temporal needed): tags, metrics, deployment workers, their filters and order,
and the archive and unharden operations, which say why they cannot apply here."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.workflows.executions.tables import Execution
from maestrale.workflows.registry.tables import DeploymentWorker
from tests.support.app_fixtures import TenantKey, default_tenant, make_client
from tests.workflows.plain_worker import register

pytestmark = pytest.mark.both_databases(
    "maestrale.workflows.registry.repository", "maestrale.workflows.metrics.repository"
)

DEPLOYMENTS = "/v1/workflows/deployments"


async def _stale(app: FastAPI, worker: str) -> None:
    """`worker` last beat an hour ago: no longer alive."""
    async with app.state.services.db.transaction() as work:
        await work.session.execute(
            sa.update(DeploymentWorker)
            .where(DeploymentWorker.name == worker)
            .values(last_seen_at=datetime.now(UTC) - timedelta(hours=1))
        )


def _names(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [d["name"] for d in response.json()["deployments"]]


async def test_tags_are_added_kept_and_filtered(
    client: httpx.AsyncClient, other: TenantKey, app: FastAPI
) -> None:
    await register(client, "dep-tags")
    assert (await client.put("/v1/workflows/echo", json={"tags": ["a"]})).status_code == 200
    added = await client.post("/v1/workflows/echo/tags", json={"tags": [" b ", "a", "b"]})
    assert added.status_code == 204 and added.content == b""
    workflow = (await client.get("/v1/workflows/echo")).json()["workflow"]
    assert workflow["tags"] == ["a", "b"]
    by_id = await client.post(f"/v1/workflows/{workflow['id']}/tags", json={"tags": ["c"]})
    assert by_id.status_code == 204
    listed = (await client.get("/v1/workflows", params={"tags": ["b", "c"]})).json()
    assert [w["name"] for w in listed["workflows"]] == ["echo"]
    assert listed["workflows"][0]["tags"] == ["a", "b", "c"]
    too_many = await client.post(
        "/v1/workflows/echo/tags", json={"tags": [str(i) for i in range(98)]}
    )
    assert too_many.status_code == 400 and "at most 100" in too_many.json()["detail"]
    bad_bodies: list[dict[str, object]] = [
        {},
        {"tags": []},
        {"tags": [" "]},
        {"tags": ["x" * 101]},
        {"tags": "a"},
    ]
    for bad in bad_bodies:
        assert (await client.post("/v1/workflows/echo/tags", json=bad)).status_code == 422
    missing = await client.post("/v1/workflows/nope/tags", json={"tags": ["a"]})
    assert missing.status_code == 404 and missing.json()["code"] == "WF_1100"
    async with make_client(app, other.key) as stranger:
        foreign = await stranger.post("/v1/workflows/echo/tags", json={"tags": ["x"]})
        assert foreign.status_code == 404
    assert (await client.get("/v1/workflows/echo")).json()["workflow"]["tags"] == ["a", "b", "c"]


async def test_metrics_come_from_the_execution_index(
    client: httpx.AsyncClient, other: TenantKey, app: FastAPI
) -> None:
    await register(client, "dep-metrics")
    tenant = await default_tenant(app.state.services.db)
    t0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    runs = [  # (status, start offset s, duration s or None while running)
        ("COMPLETED", 0, 2.0),
        ("COMPLETED", 10, 4.0),
        ("FAILED", 20, 1.0),
        ("TERMINATED", 30, 3.0),
        ("CANCELED", 40, 5.0),
        ("RUNNING", 50, None),
        ("COMPLETED", 3600, 6.0),
    ]
    async with app.state.services.db.transaction() as work:
        for status, offset, duration in runs:
            start = t0 + timedelta(seconds=offset)
            work.session.add(
                Execution(
                    id=uuid.uuid4().hex,
                    organization_id=tenant.organization_id,
                    workspace_id=tenant.workspace_id,
                    workflow_name="echo",
                    root_execution_id="root",
                    status=status,
                    start_time=start,
                    end_time=None if duration is None else start + timedelta(seconds=duration),
                    result=None,
                )
            )
    everything = await client.get("/v1/workflows/echo/metrics")
    assert everything.status_code == 200, everything.text
    body = everything.json()
    assert {k: v["value"] for k, v in body.items() if k != "latency_over_time"} == {
        "execution_count": 7,
        "success_count": 3,
        "error_count": 2,
        "average_latency_ms": 3500,  # the six closed ones: 21 s
        "retry_rate": -1,
    }
    series = body["latency_over_time"]["value"]
    first = int(t0.timestamp())
    # One hour in at most 500 buckets: 8 s wide, from the first start.
    assert series == [
        [first, 2000],
        [first + 8, 4000],
        [first + 16, 1000],
        [first + 24, 3000],
        [first + 40, 5000],
        [first + 3600, 6000],
    ]
    window = await client.get(
        "/v1/workflows/echo/metrics",
        params={"start_time": "2026-01-01T12:00:05Z", "end_time": "2026-01-01T13:00:45+01:00"},
    )
    got = {k: v["value"] for k, v in window.json().items() if k != "latency_over_time"}
    assert got["execution_count"] == 4 and got["success_count"] == 1 and got["error_count"] == 2
    assert got["average_latency_ms"] == 3250
    assert (await client.get("/v1/workflows/counter/metrics")).json()["execution_count"] == {
        "value": 0
    }
    reversed_window = await client.get(
        "/v1/workflows/echo/metrics",
        params={"start_time": "2026-01-02T00:00:00Z", "end_time": "2026-01-01T00:00:00Z"},
    )
    assert reversed_window.status_code == 400
    bad_time = await client.get("/v1/workflows/echo/metrics", params={"start_time": "soon"})
    assert bad_time.status_code == 422
    assert (await client.get("/v1/workflows/nope/metrics")).status_code == 404
    async with make_client(app, other.key) as stranger:
        assert (await stranger.get("/v1/workflows/echo/metrics")).status_code == 404
        await register(stranger, "dep-metrics")  # its own echo: none of these executions
        theirs = (await stranger.get("/v1/workflows/echo/metrics")).json()
        assert theirs["execution_count"] == {"value": 0} and theirs["latency_over_time"] == {
            "value": []
        }


async def test_deployments_workers_filters_and_order(
    client: httpx.AsyncClient, other: TenantKey, app: FastAPI
) -> None:
    await register(client, "dep-a", "a1")
    await register(client, "dep-b", "b1")
    await register(client, "dep-b", "b2")
    await register(client, "dep-c", "c1")
    await _stale(app, "b2")
    await _stale(app, "c1")

    # Active first, each group newest first; `order_by` alone when given.
    assert _names(await client.get(DEPLOYMENTS)) == ["dep-b", "dep-a", "dep-c"]
    assert _names(await client.get(DEPLOYMENTS, params={"order": "asc"})) == [
        "dep-a",
        "dep-b",
        "dep-c",
    ]
    by_created = await client.get(DEPLOYMENTS, params={"order_by": "created_at"})
    assert _names(by_created) == ["dep-c", "dep-b", "dep-a"]
    assert _names(await client.get(DEPLOYMENTS, params={"active_only": True})) == [
        "dep-b",
        "dep-a",
    ]
    listed = (await client.get(DEPLOYMENTS)).json()["deployments"]
    b = next(d for d in listed if d["name"] == "dep-b")
    assert b["owner"] is None and b["is_hardened"] is False
    assert b["last_heartbeat"] == b["updated_at"] and b["active_worker_count"] == 1
    nothing: list[dict[str, str | bool]] = [
        {"is_hardened": True},
        {"owner": "u"},
        {"created_by": "u"},
        {"repository_url": "https://x/y.git"},
        {"dockerfile_path": "Dockerfile"},
        {"location_types": "k8s"},
        {"workflow_name": "nope"},
    ]
    for params in nothing:
        assert _names(await client.get(DEPLOYMENTS, params=params)) == [], params
    assert len(_names(await client.get(DEPLOYMENTS, params={"location_types": "local"}))) == 3
    assert len(_names(await client.get(DEPLOYMENTS, params={"is_hardened": False}))) == 3
    assert _names(await client.get(DEPLOYMENTS, params={"search": "DEP-A"})) == ["dep-a"]
    dep_a = next(d for d in listed if d["name"] == "dep-a")
    by_id = await client.get(DEPLOYMENTS, params={"search": dep_a["id"][:8]})
    assert _names(by_id) == ["dep-a"]

    workers = await client.get(f"{DEPLOYMENTS}/dep-b/workers")
    assert workers.status_code == 200
    assert [w["name"] for w in workers.json()["workers"]] == ["b1", "b2"]
    assert all(w["last_heartbeat"] == w["updated_at"] for w in workers.json()["workers"])
    active = (await client.get(f"{DEPLOYMENTS}/dep-b/workers?worker_status=active")).json()
    assert [w["name"] for w in active["workers"]] == ["b1"]
    inactive = (await client.get(f"{DEPLOYMENTS}/dep-b/workers?worker_status=inactive")).json()
    assert [w["name"] for w in inactive["workers"]] == ["b2"]
    page = (await client.get(f"{DEPLOYMENTS}/dep-b/workers", params={"limit": 1})).json()
    assert [w["name"] for w in page["workers"]] == ["b1"] and page["next_cursor"]
    rest = await client.get(
        f"{DEPLOYMENTS}/dep-b/workers", params={"limit": 1, "cursor": page["next_cursor"]}
    )
    assert [w["name"] for w in rest.json()["workers"]] == ["b2"]

    serving = await client.get(f"{DEPLOYMENTS}/dep-a", params={"workflow_name": "echo"})
    assert serving.json()["is_active"] is True
    assert serving.json()["last_heartbeat"] == serving.json()["workers"][0]["last_heartbeat"]
    not_serving = await client.get(f"{DEPLOYMENTS}/dep-a", params={"workflow_name": "nope"})
    assert not_serving.json()["is_active"] is False
    regs = await client.get("/v1/workflows/registrations", params={"workflow_name": "counter"})
    assert {r["workflow_id"] for r in regs.json()["workflow_registrations"]} == {
        (await client.get("/v1/workflows/counter")).json()["workflow"]["id"]
    }
    assert len(regs.json()["workflow_registrations"]) == 3

    # What deployments here do not have is said, never a bare 404.
    archive = await client.get(f"{DEPLOYMENTS}/dep-a/archive")
    assert archive.status_code == 404 and "has no archive" in archive.json()["detail"]
    unharden = await client.post(f"{DEPLOYMENTS}/{dep_a['id']}/unharden")
    assert unharden.status_code == 409 and "is not hardened" in unharden.json()["detail"]
    assert (await client.post(f"{DEPLOYMENTS}/dep-a/unharden")).status_code == 409

    for method, path in (
        ("get", f"{DEPLOYMENTS}/nope/workers"),
        ("get", f"{DEPLOYMENTS}/nope/archive"),
        ("post", f"{DEPLOYMENTS}/{uuid.uuid4()}/unharden"),
        ("post", f"{DEPLOYMENTS}/{dep_a['id']}/unharden?workspace_id={other.tenant.workspace_id}"),
        ("get", f"{DEPLOYMENTS}?workspace_id={other.tenant.workspace_id}"),
    ):
        missing = await getattr(client, method)(path)
        assert missing.status_code == 404 and "not found" in missing.json()["detail"], path
    for query in ("worker_status=busy", "limit=0"):
        assert (await client.get(f"{DEPLOYMENTS}/dep-b/workers?{query}")).status_code == 422
    for query in ("order_by=name", "order=up", "location_types=moon"):
        assert (await client.get(f"{DEPLOYMENTS}?{query}")).status_code == 422
    async with make_client(app, other.key) as stranger:
        assert (await stranger.get(f"{DEPLOYMENTS}/dep-b/workers")).status_code == 404
        assert (await stranger.get(f"{DEPLOYMENTS}/dep-a/archive")).status_code == 404
        foreign = await stranger.post(f"{DEPLOYMENTS}/{dep_a['id']}/unharden")
        assert foreign.status_code == 404 and "not found" in foreign.json()["detail"]
