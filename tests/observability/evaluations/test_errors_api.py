"""Evaluations v2: workspace isolation, refused filters (400 naming them), conflicts and bad
input."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.batch.support import run_jobs
from tests.observability.evaluations.support import OBS, dataset, evaluation, post, start_run
from tests.observability.events_seed import obs_error
from tests.support.app_fixtures import TenantKey, make_client

RUNS = f"{OBS}/evaluation-runs_v2"


@pytest.mark.both_databases(
    "maestrale.observability.evaluations.projects.repository",
    "maestrale.observability.evaluations.optimizations.repository",
)
async def test_another_workspace_sees_nothing(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    await evaluation(client)
    run = await start_run(client, await dataset(client, "hi"))
    await run_jobs(app)
    record = (await client.post(f"{RUNS}/{run['id']}/records/search")).json()
    record_id = record["records"]["results"][0]["id"]
    spec = {"evaluator": "quality"}
    body = {"name": "o", "evaluation": "tone-check", "objective_spec": spec}
    opt = await post(client, "/optimizations", body)
    async with make_client(app, other.key) as foreign:
        for url, code in (
            (f"{OBS}/projects/support", "PROJECT_NOT_FOUND"),
            (f"{OBS}/evaluations_v2/tone-check", "EVALUATION_NOT_FOUND"),
            (f"{RUNS}/{run['id']}", "EVALUATION_RUN_NOT_FOUND"),
            (f"{RUNS}/{run['id']}/statistics", "EVALUATION_RUN_NOT_FOUND"),
            (f"{RUNS}/{run['id']}/records/{record_id}", "EVALUATION_RUN_NOT_FOUND"),
            (f"{OBS}/optimizations/{opt['id']}", "OPTIMIZATION_NOT_FOUND"),
        ):
            obs_error(await foreign.get(url), 404, code)
        searched = await foreign.post(f"{RUNS}/search", json={"run_ids": [run["id"]]})
        assert searched.json()["runs"]["count"] == 0
        assert (await foreign.get(f"{OBS}/projects")).json()["projects"]["count"] == 0
        assert (await foreign.get(f"{OBS}/optimizations")).json()["optimizations"]["count"] == 0
        body = {"name": "x", "evaluators": ["tone"]}
        resp = await foreign.post(f"{OBS}/projects/support/evaluations_v2", json=body)
        obs_error(resp, 404, "PROJECT_NOT_FOUND")
        obs_error(await foreign.delete(f"{RUNS}/{run['id']}"), 404, "EVALUATION_RUN_NOT_FOUND")
        # Its own project of the same slug, whose evaluation cannot use the other's judges.
        await post(foreign, "/projects", {"name": "Support"})
        resp = await foreign.post(f"{OBS}/projects/support/evaluations_v2", json=body)
        assert "['tone']" in obs_error(resp, 404, "JUDGE_NOT_FOUND")
    # Deleted by its workspace, a run is gone from every read.
    assert (await client.delete(f"{RUNS}/{run['id']}")).status_code == 204
    obs_error(await client.get(f"{RUNS}/{run['id']}"), 404, "EVALUATION_RUN_NOT_FOUND")
    assert (await client.post(f"{RUNS}/search", json={})).json()["runs"]["count"] == 0


async def test_unserved_filters_are_refused_by_name(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await evaluation(client)
    run = await start_run(client, await dataset(client, "hi"))

    async def refused(url: str, body: dict[str, Any], *names: str) -> None:
        message = obs_error(await client.post(url, json=body), 400, "VALIDATION_ERROR")
        assert all(name in message for name in names), message

    goals = {"filters": [{"values": ["passed"]}]}
    await refused(f"{RUNS}/search", {"goal_filters": goals, "system": {"name": {}}}, "goal_filters")
    await refused(f"{RUNS}/search", {"system": {"params": {"filters": [{}]}}}, "system")
    contains = {"filters": [{"key": "k", "operator": "contains", "value": "x"}]}
    await refused(f"{RUNS}/search", {"metadata": contains}, "metadata.k contains")
    std = {"evaluator_name": "quality", "metric": "std", "operator": "gt", "value": 1}
    await refused(f"{RUNS}/search", {"score_filters": {"filters": [std]}}, "quality.std")
    content = {"filters": [{"value": "hello"}]}
    records = f"{RUNS}/{run['id']}/records/search"
    await refused(records, {"input_filters": content, "output_filters": content}, "input_filters")
    await refused(f"{RUNS}/{run['id']}/statistics/compute", {"goal_filters": goals}, "goal_filters")
    # An empty group filters nothing: accepted.
    resp = await client.post(f"{RUNS}/search", json={"goal_filters": {"filters": []}})
    assert resp.status_code == 200
    # Malformed input is a 422 of the group's shape; a page past 2^63 a 400.
    bad_key = {"filters": [{"key": 'a"b', "operator": "eq", "value": 1}]}
    obs_error(
        await client.post(f"{RUNS}/search", json={"metadata": bad_key}), 422, "VALIDATION_ERROR"
    )
    resp = await client.post(f"{RUNS}/search", params={"page": 2**62, "page_size": 100})
    obs_error(resp, 400, "VALIDATION_ERROR")


async def test_conflicts_and_missing_references(client: httpx.AsyncClient) -> None:
    await evaluation(client)
    obs_error(
        await client.post(f"{OBS}/projects", json={"name": "support!"}),
        409,
        "PROJECT_ALREADY_EXISTS",
    )
    body = {"name": "Tone check", "evaluators": ["tone"]}
    resp = await client.post(f"{OBS}/projects/support/evaluations_v2", json=body)
    obs_error(resp, 409, "EVALUATION_ALREADY_EXISTS")
    resp = await client.post(f"{OBS}/projects", json={"name": "x", "slug": "Not A Slug"})
    obs_error(resp, 422, "VALIDATION_ERROR")
    resp = await client.post(
        f"{OBS}/evaluations_v2/tone-check/runs", json={"name": "r", "dataset_id": "nope"}
    )
    obs_error(resp, 404, "DATASET_NOT_FOUND")
    # A project renamed keeps its slug; a deleted one keeps it taken.
    patched = await client.patch(f"{OBS}/projects/support", json={"name": "Help desk"})
    assert patched.json()["slug"] == "support" and patched.json()["evaluations"][0]["slug"]
    assert (await client.delete(f"{OBS}/projects/support")).status_code == 204
    obs_error(await client.get(f"{OBS}/projects/support"), 404, "PROJECT_NOT_FOUND")
    obs_error(
        await client.post(f"{OBS}/projects", json={"name": "Support"}),
        409,
        "PROJECT_ALREADY_EXISTS",
    )
