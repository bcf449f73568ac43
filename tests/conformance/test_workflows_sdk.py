"""Datasets, deployments, workflow metrics and tags through each SDK release (2.8.0, the newest
2.x, the newest 3.x) on a live server: every answer parses into the SDK's own models, 3.x's
required `Dataset.slug` and `last_heartbeat` included; the operations only 3.x has are called on
3.x (the newest 2.x has the workers list too)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.conformance.conftest import LiveServer
from tests.support.sdks import NEWEST_3, OWN, SdkProcess
from tests.workflows.plain_worker import register

D = "beta.observability.datasets."
W = "workflows."


def test_datasets_and_workflows_through_each_sdk(
    any_sdk: SdkProcess, live_server: LiveServer
) -> None:
    sdk, v28, v3 = any_sdk, any_sdk.version == OWN, any_sdk.version == NEWEST_3

    def ok(operation: str, **kwargs: Any) -> Any:
        return sdk.call(operation, **kwargs).ok()

    name = f"Golden {sdk.version}"
    created = ok(D + "create", name=name, description="3.x reads it")
    if v3:
        assert created["slug"] == "golden-" + sdk.version.replace(".", "-")
    got = ok(D + "fetch", dataset_id=created["id"])
    assert got["id"] == created["id"] and got["name"] == name
    listed = ok(D + "list", q=name)
    assert [d["id"] for d in listed["datasets"]["results"]] == [created["id"]]
    record = ok(D + "create_record", dataset_id=created["id"], payload={"messages": []})
    assert record["source"] == "DIRECT_INPUT"

    deployment = "conf-" + sdk.version.replace(".", "-")

    async def _register() -> None:
        headers = {"Authorization": f"Bearer {live_server.api_key}"}
        async with httpx.AsyncClient(base_url=live_server.url, headers=headers) as client:
            await register(client, deployment)

    asyncio.run(_register())
    deployments = ok(W + "deployments.list_deployments", active_only=True)
    mine = next(d for d in deployments["deployments"] if d["name"] == deployment)
    assert mine["is_active"] is True and mine["worker_count"] == 1
    detail = ok(W + "deployments.get_deployment", name=deployment)
    assert [w["name"] for w in detail["workers"]] == ["worker-1"]
    metrics = ok(W + "metrics.get_workflow_metrics", workflow_name="echo")
    assert metrics["execution_count"] == {"value": 0} and metrics["retry_rate"] == {"value": -1}
    if not v28:
        workers = ok(W + "deployments.list_deployment_workers", name=deployment)
        assert [w["name"] for w in workers["workers"]] == ["worker-1"]
    if v3:
        assert "last_heartbeat" in mine and detail["owner"] is None
        assert ok(W + "add_workflow_tags", workflow_identifier="echo", tags=["sdk3"]) is None
        tagged = ok(W + "get_workflows", tags=["sdk3"])["result"]  # a page of a pager
        assert [w["name"] for w in tagged["workflows"]] == ["echo"]
        archive = sdk.call(W + "deployments.get_deployment_archive", name=deployment)
        assert archive.status == 404 and "has no archive" in archive.body
        unharden = sdk.call(W + "deployments.unharden_deployment", deployment_id=mine["id"])
        assert unharden.status == 409 and "is not hardened" in unharden.body
