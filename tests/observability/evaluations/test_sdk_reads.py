"""mistralai 3.x reads of evaluations v2 served on a socket: projects, evaluations, a run made
over HTTP (its job run in this process), its records, statistics and optimizations, each parsed
into the SDK's own models."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from fastapi import FastAPI

from tests.batch.support import run_jobs
from tests.observability.test_judges_api import definition
from tests.support.app_fixtures import API_KEY
from tests.support.live import on_socket
from tests.support.sdks import NEWEST_3, SdkProcess

QUALITY = {
    "type": "REGRESSION",
    "min": 1,
    "min_description": "bad",
    "max": 5,
    "max_description": "good",
}


async def test_the_sdk_reads_a_completed_run(app: FastAPI, client: httpx.AsyncClient) -> None:
    async def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
        resp = await client.post(f"/v1/observability{url}", json=body)
        assert resp.status_code == 201, resp.text
        created: dict[str, Any] = resp.json()
        return created

    await post("/judges", definition())
    await post("/judges", definition("quality", QUALITY))
    ds = await post("/datasets", {"name": "golden", "description": ""})
    for text in ("hello", "thanks"):
        body = {"payload": {"messages": [{"role": "user", "content": text}]}, "properties": {}}
        await post(f"/datasets/{ds['id']}/records", body)
    await post("/projects", {"name": "Support"})
    await post(
        "/projects/support/evaluations_v2", {"name": "Tone", "evaluators": ["tone", "quality"]}
    )
    run = await post("/evaluations_v2/tone/runs", {"name": "baseline", "dataset_id": ds["id"]})
    await run_jobs(app)
    got = await client.get(f"/v1/observability/evaluation-runs_v2/{run['id']}")
    assert got.json()["status"] == "completed"
    spec = {"evaluator": "quality"}
    opt = await post("/optimizations", {"name": "o", "evaluation": "tone", "objective_spec": spec})
    await post(f"/optimizations/{opt['id']}/trials", {"run_id": run["id"]})
    async with on_socket(app) as port:
        await asyncio.to_thread(_read, f"http://127.0.0.1:{port}", run["id"], opt["id"])


def _read(server: str, run_id: str, opt_id: str) -> None:
    sdk = SdkProcess(NEWEST_3, server, API_KEY)
    try:

        def call(operation: str, **kwargs: Any) -> Any:
            return sdk.call("beta.observability.evaluations." + operation, **kwargs).ok()

        projects = call("projects.list")["projects"]
        assert projects["count"] == 1 and projects["results"][0]["evaluations"][0]["slug"] == "tone"
        assert call("projects.get", project_slug="support")["name"] == "Support"
        assert call("list", project_slug="support")["evaluations"]["count"] == 1
        assert call("get", evaluation_slug="tone")["slug"] == "tone"
        runs = call("runs.search", evaluation_slug="tone", tags={"values": []})["runs"]
        assert [r["id"] for r in runs["results"]] == [run_id]
        everything = call("runs.search_all", evaluation_run_filter_input={})["runs"]
        assert everything["results"][0]["project"]["slug"] == "support"
        got = call("runs.get", run_id=run_id)
        assert got["status"] == "completed" and got["statistics"]["quality"]["count"] == 2
        stats = call("runs.get_statistics", run_id=run_id)["statistics"]
        assert stats["tone"]["frequencies"] == {"polite": 2}
        only = {
            "filters": [
                {"evaluator_name": "quality", "metric": "avg", "operator": "gt", "value": 4}
            ]
        }
        computed = call("runs.compute_statistics", run_id=run_id, score_filters=only)
        assert computed["statistics"]["quality"]["count"] == 0
        records = call(
            "records.search", run_id=run_id, sort={"kind": "field", "field": "created_at"}
        )
        results = records["records"]["results"]
        assert len(results) == 2
        record = call("records.get", run_id=run_id, record_id=results[0]["id"])
        scores = record["output_record"]["generations"][0]["scores"]
        assert scores["tone"][0]["value"] == "polite" and scores["quality"][0]["value"] == 1.0
        assert call("optimizations.list")["optimizations"]["count"] == 1
        assert call("optimizations.get", optimization_id=opt_id)["evaluation"]["slug"] == "tone"
        trials = call("optimizations.list_trials", optimization_id=opt_id)["trials"]
        assert trials["results"][0]["observations"][0]["score"] == 1.0
        missing = sdk.call("beta.observability.evaluations.runs.get", run_id="nope")
        assert missing.status == 404
    finally:
        sdk.close()
