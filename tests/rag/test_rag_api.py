"""The RAG groups over HTTP: a deployment registered, registered again, reporting its metrics
online and offline and removed; configurations registered, registered again and reporting runs;
another workspace's ids are unknown; bad input is a 422."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
from fastapi import FastAPI

from tests.rag.support import deployment, index, ok
from tests.support.app_fixtures import TenantKey, make_client

DEPLOYMENTS = "/v1/rag/deployments"
CONFIGS = "/v1/rag/ingestion_pipeline_configurations"


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _indexes(listed: dict[str, Any]) -> list[tuple[str, int | None]]:
    return [(i["name"], i["document_count"]) for i in listed["deployment"]["indexes"]]


async def test_a_deployment_from_registration_to_removal(client: httpx.AsyncClient) -> None:
    first = await ok(client.put(DEPLOYMENTS, json=deployment("prod", "docs", "faq", "old")))
    [listed] = (await ok(client.get(DEPLOYMENTS)))["deployments"]
    assert (listed["id"], listed["name"], listed["status"]) == (first["id"], "prod", "offline")
    assert listed["document_count"] == 0 and listed["creator_id"]
    assert listed["deployment"]["type"] == "vespa"
    assert _indexes(listed) == [("docs", None), ("faq", None), ("old", None)]
    ids = {i["name"]: i["id"] for i in listed["deployment"]["indexes"]}

    online = {
        "status": "online",
        "document_count": 12,
        "index_metrics": [
            {"name": "docs", "document_count": 10},
            {"name": "old", "document_count": 2},
        ],
    }
    reported = await ok(client.put(f"{DEPLOYMENTS}/{first['id']}/metrics", json=online))
    assert (reported["status"], reported["document_count"]) == ("online", 12)
    assert _indexes(reported) == [("docs", 10), ("faq", None), ("old", 2)]

    # Registered again: the same id; "docs" keeps its id and count, "old" is gone, "new" is new.
    again = deployment("prod", "new", "docs", status="online")
    assert await ok(client.put(DEPLOYMENTS, json=again)) == first
    [listed] = (await ok(client.get(DEPLOYMENTS)))["deployments"]
    assert _indexes(listed) == [("new", None), ("docs", 10)]
    assert listed["deployment"]["indexes"][1]["id"] == ids["docs"]
    assert _time(listed["created_at"]) < _time(listed["modified_at"])
    assert listed["status"] == "online"

    unknown = {**online, "index_metrics": [{"name": "old", "document_count": 1}]}
    refused = await client.put(f"{DEPLOYMENTS}/{first['id']}/metrics", json=unknown)
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"] == ["body", "index_metrics", 0, "name"]

    offline = await ok(
        client.put(f"{DEPLOYMENTS}/{first['id']}/metrics", json={"status": "offline"})
    )
    assert (offline["status"], offline["document_count"], _indexes(offline)[1]) == (
        "offline",
        12,
        ("docs", 10),
    )
    cleared = await ok(
        client.put(
            f"{DEPLOYMENTS}/{first['id']}/metrics",
            json={"status": "offline", "clear_metrics": True},
        )
    )
    assert cleared["document_count"] == 0 and _indexes(cleared) == [("new", None), ("docs", None)]

    assert await ok(client.delete(f"{DEPLOYMENTS}/{first['id']}")) == {
        "id": first["id"],
        "deleted": True,
    }
    assert await ok(client.get(DEPLOYMENTS)) == {"deployments": []}
    gone = await client.delete(f"{DEPLOYMENTS}/{first['id']}")
    assert gone.status_code == 404 and gone.json()["code"] == "deployment_not_found"


async def test_a_configuration_counts_its_runs(client: httpx.AsyncClient) -> None:
    body = {
        "name": "nightly",
        "pipeline_composition": {"parser": "pdf", "chunker": "by_title"},
        "target_indexes": [{"name": "docs", "type": "vespa"}],
    }
    created = await ok(client.put(CONFIGS, json=body))
    assert (created["last_run_time"], created["last_run_chunks_count"]) == (None, 0)
    assert created["total_chunks_count"] == 0 and created["author_id"]
    assert created["target_indexes"] == [{"name": "docs", "type": "vespa"}]

    run = f"{CONFIGS}/{created['id']}/run_info"
    later = await ok(
        client.put(run, json={"execution_time": "2026-03-02T10:00:00+01:00", "chunks_count": 7})
    )
    assert (later["last_run_time"], later["last_run_chunks_count"]) == ("2026-03-02T09:00:00Z", 7)
    # An earlier run reported late: counted, not the last run.
    earlier = await ok(
        client.put(run, json={"execution_time": "2026-03-01T00:00:00", "chunks_count": 5})
    )
    assert (earlier["last_run_time"], earlier["last_run_chunks_count"]) == (
        "2026-03-02T09:00:00Z",
        7,
    )
    assert earlier["total_chunks_count"] == 12

    # Registered again: the same id, the definition replaced (what is not sent is cleared).
    again = await ok(
        client.put(CONFIGS, json={"name": "nightly", "pipeline_composition": {"a": "b"}})
    )
    assert again["id"] == created["id"] and again["total_chunks_count"] == 12
    assert (again["pipeline_composition"], again["target_indexes"]) == ({"a": "b"}, None)
    await ok(client.put(CONFIGS, json={"name": "hourly"}))
    listed = await ok(client.get(CONFIGS))
    assert [(c["name"], c["total_chunks_count"]) for c in listed] == [
        ("nightly", 12),
        ("hourly", 0),
    ]

    # The total stays a signed 64-bit integer.
    past = await client.put(
        run, json={"execution_time": "2026-03-03T00:00:00Z", "chunks_count": 2**63 - 1}
    )
    assert past.status_code == 422 and past.json()["detail"][0]["loc"] == ["body", "chunks_count"]
    for count in (2**63, 2**64 + 1, -1):
        refused = await client.put(
            run, json={"execution_time": "2026-03-03T00:00:00Z", "chunks_count": count}
        )
        assert refused.status_code == 422, count
    assert (await ok(client.get(CONFIGS)))[0]["total_chunks_count"] == 12


async def test_another_workspace_knows_none_of_it(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    mine = (await ok(client.put(DEPLOYMENTS, json=deployment("prod", "docs"))))["id"]
    config = (await ok(client.put(CONFIGS, json={"name": "nightly"})))["id"]
    async with make_client(app, other.key) as stranger:
        calls = [
            stranger.put(f"{DEPLOYMENTS}/{mine}/metrics", json={"status": "offline"}),
            stranger.delete(f"{DEPLOYMENTS}/{mine}"),
            stranger.put(
                f"{CONFIGS}/{config}/run_info",
                json={"execution_time": "2026-03-01T00:00:00Z", "chunks_count": 1},
            ),
        ]
        for call in calls:
            assert (await call).status_code == 404
        assert await ok(stranger.get(DEPLOYMENTS)) == {"deployments": []}
        assert await ok(stranger.get(CONFIGS)) == []
        # Its own registration of the same names is another object.
        theirs = await ok(stranger.put(DEPLOYMENTS, json=deployment("prod", "docs")))
        assert theirs["id"] != mine
        assert (await ok(stranger.put(CONFIGS, json={"name": "nightly"})))["id"] != config
    assert [d["id"] for d in (await ok(client.get(DEPLOYMENTS)))["deployments"]] == [mine]


def _with(path: str, value: Any) -> dict[str, Any]:
    """A valid registration with `value` at `path` (dotted; an int indexes a list)."""
    body = deployment("bad", "docs")
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    target: Any = body
    for part in parents:
        target = target[part]
    target[last] = value
    return body


BAD_REGISTRATIONS = [
    ("deployment.query_url", "ftp://vespa.example.com/"),
    ("deployment.query_url", "vespa.example.com/search"),
    ("deployment.query_url", "http://"),
    ("deployment.query_url", "http://vespa.example.com:99999/"),
    ("deployment.query_url", "http://vespa example.com/"),
    ("deployment.type", "elastic"),
    ("deployment.indexes", [index("a"), index("a")]),
    ("deployment.indexes", [index(f"i{n}") for n in range(101)]),
    ("deployment.indexes.0.sd", "x" * (256 * 1024 + 1)),
    ("deployment.indexes.0.sd", "schema a {\u0000}"),
    ("deployment.indexes.0.embedding_dimensions", 2**63),
    ("deployment.indexes.0.fields.0.type", "tensor"),
    ("deployment.indexes.0.fields", [index("a")["fields"][0]] * 2),
    ("name", "line\nbreak"),
    ("status", "paused"),
]


async def test_bad_input_is_a_422(client: httpx.AsyncClient) -> None:
    for path, value in BAD_REGISTRATIONS:
        resp = await client.put(DEPLOYMENTS, json=_with(path, value))
        assert resp.status_code == 422, (path, resp.text)
    assert await ok(client.get(DEPLOYMENTS)) == {"deployments": []}
    prod = (await ok(client.put(DEPLOYMENTS, json=deployment("prod", "docs"))))["id"]
    for metrics in (
        {"status": "paused"},
        {"status": "online", "document_count": -1, "index_metrics": []},
        {"status": "online", "document_count": 1},
    ):
        resp = await client.put(f"{DEPLOYMENTS}/{prod}/metrics", json=metrics)
        assert resp.status_code == 422, (metrics, resp.text)
    steps = {f"step{n}": "x" for n in range(101)}
    resp = await client.put(CONFIGS, json={"name": "c", "pipeline_composition": steps})
    assert resp.status_code == 422
