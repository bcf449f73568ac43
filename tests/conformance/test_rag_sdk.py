"""mistralai 3.x drives the RAG groups (`beta.rag.search_indexes`: four operations,
`beta.rag.ingestion_pipeline_configurations`: three) against a live server; every answer parses
into the SDK's own models, and its errors are the SDK's 4xx."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conformance.conftest import LiveServer
from tests.rag.support import deployment
from tests.support.sdks import NEWEST_3, SdkProcess


@pytest.fixture(scope="module")
def sdk3(live_server: LiveServer) -> Iterator[SdkProcess]:
    sdk = SdkProcess(NEWEST_3, live_server.url, live_server.api_key)
    yield sdk
    sdk.close()


def test_deployments_through_every_operation(sdk3: SdkProcess) -> None:
    def ok(operation: str, **kwargs: object) -> Any:
        return sdk3.call(f"beta.rag.search_indexes.{operation}", **kwargs).ok()

    name = f"sdk-{uuid.uuid4().hex[:8]}"
    body = deployment(name, "docs", "faq")
    created = ok("register_deployment", **body)
    assert set(created) == {"id"}
    metrics = {
        "status": "online",
        "document_count": 3,
        "index_metrics": [{"name": "docs", "document_count": 3}],
    }
    ok("update_index_metrics", deployment_id=created["id"], request_body=metrics)
    assert ok("register_deployment", **body, status="online") == created

    [mine] = [d for d in ok("get_deployment_summaries")["deployments"] if d["name"] == name]
    assert (mine["id"], mine["status"], mine["document_count"]) == (created["id"], "online", 3)
    indexes = mine["deployment"]["indexes"]
    assert [(i["name"], i["document_count"]) for i in indexes] == [("docs", 3), ("faq", None)]

    offline = {"status": "offline", "clear_metrics": True}
    ok("update_index_metrics", deployment_id=created["id"], request_body=offline)
    ok("unregister_deployment", deployment_id=created["id"])
    gone = sdk3.call("beta.rag.search_indexes.unregister_deployment", deployment_id=created["id"])
    assert gone.status == 404


def test_ingestion_pipeline_configurations_through_every_operation(sdk3: SdkProcess) -> None:
    def call(operation: str, **kwargs: object) -> Any:
        return sdk3.call(f"beta.rag.ingestion_pipeline_configurations.{operation}", **kwargs)

    name = f"sdk-{uuid.uuid4().hex[:8]}"
    created = call(
        "register",
        name=name,
        pipeline_composition={"parser": "pdf"},
        target_indexes=[{"name": "docs", "type": "vespa"}],
    ).ok()
    assert (created["name"], created["pipeline_composition"]) == (name, {"parser": "pdf"})
    assert created["last_run_time"] is None and created["total_chunks_count"] == 0

    ran = call(
        "update_run_info",
        id=created["id"],
        execution_time="2026-03-01T12:00:00Z",
        chunks_count=40,
    ).ok()
    assert (ran["last_run_chunks_count"], ran["total_chunks_count"]) == (40, 40)
    assert ran["last_run_time"].startswith("2026-03-01T12:00:00")

    [mine] = [c for c in call("list").ok() if c["name"] == name]
    assert mine["id"] == created["id"] and mine["total_chunks_count"] == 40
    unknown = call("update_run_info", id="nope", execution_time="2026-03-01", chunks_count=1)
    assert unknown.status == 404
