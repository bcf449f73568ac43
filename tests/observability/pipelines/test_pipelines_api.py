"""Pipelines: create (judges by slug, selectors checked), list, get, update, delete, errors and
isolation; the first run starts at creation and schedules the next."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.core.jobs.tables import Job
from maestrale.observability.pipelines.tables import Pipeline
from tests.batch.support import run_jobs
from tests.observability.events_seed import obs_error
from tests.observability.pipelines.support import PIPELINES, create_pipeline
from tests.observability.test_judges_api import SCORE, new_judge
from tests.support.app_fixtures import TenantKey, make_client


async def test_pipeline_crud(app: FastAPI, client: httpx.AsyncClient) -> None:
    tone = await new_judge(client)
    await new_judge(client, name="Helpfulness Score", output=SCORE)
    sampling = {"type": "attribute_hash", "attribute": "gen_ai.conversation.id", "percentage": 25}
    created = await create_pipeline(
        client,
        description="nightly",
        selectors=[{"source_kind": "span", "filter": "span_name = 'chat'"}],
        # By name, by the name made a slug, by id.
        definitions=[
            {"slug": "tone", "sampling": sampling},
            {"slug": "helpfulness-score", "mapping": {"input": "app.question"}},
        ],
        unknown_field="ignored",
    )
    assert created["slug"] == "support-qa" and created["enabled"] is True
    assert created["description"] == "nightly" and created["creator_id"]
    first, second = created["pipeline_configs"]
    assert (first["slug"], first["name"], first["scorer_slug"]) == (
        "support-qa-tone",
        "tone",
        "tone",
    )
    assert first["pipeline_kind"] == "judge-v1" and first["scope"] == "workspace"
    assert first["sampling"] == {"type": "attribute_hash", **{k: sampling[k] for k in sampling}}
    assert first["definition"]["result_spec"] == {
        "type": "categorical",
        "labels": ["polite", "rude"],
    }
    assert first["definition"]["model"] == "maestrale-echo"
    assert first["selectors"] == [{"source_kind": "span", "filter": "span_name = 'chat'"}]
    assert second["slug"] == "support-qa-helpfulness-score" and second["sampling"] is None
    assert second["definition"]["result_spec"] == {"type": "numeric", "min": 1.0, "max": 5.0}
    assert second["definition"]["mapping"] == {"input": "app.question"}
    assert (await client.get(f"{PIPELINES}/{created['id']}")).json() == created

    other = await create_pipeline(client, name="Other", enabled=False)
    page = (await client.get(PIPELINES, params={"page_size": 1})).json()["pipelines"]
    assert page["count"] == 2 and page["results"][0]["id"] == other["id"] and page["next"]
    assert (await client.get(PIPELINES, params={"enabled": "false"})).json()["pipelines"][
        "count"
    ] == 1
    assert (await client.get(PIPELINES, params={"q": "SUPP"})).json()["pipelines"]["count"] == 1

    # A judge the pipeline keeps keeps its config; the other is replaced.
    resp = await client.put(
        f"{PIPELINES}/{created['id']}",
        json={"name": "Renamed", "definitions": [{"slug": tone["id"]}], "enabled": False},
    )
    assert resp.status_code == 200, resp.text
    updated = resp.json()
    assert (updated["name"], updated["slug"], updated["enabled"]) == (
        "Renamed",
        "support-qa",
        False,
    )
    [kept] = updated["pipeline_configs"]
    assert (kept["id"], kept["slug"], kept["sampling"]) == (first["id"], first["slug"], None)
    assert updated["description"] == "nightly"  # not sent: unchanged

    assert (await client.delete(f"{PIPELINES}/{created['id']}")).status_code == 204
    obs_error(await client.get(f"{PIPELINES}/{created['id']}"), 404, "PIPELINE_NOT_FOUND")


async def test_pipeline_errors_and_isolation(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    await new_judge(client)

    async def refused(status: int, code: str, **body: Any) -> str:
        full = {"name": "p", "selectors": [], "definitions": [{"slug": "tone"}], **body}
        return obs_error(await client.post(PIPELINES, json=full), status, code)

    bad = [{"source_kind": "span", "filter": "span_name = "}]
    await refused(400, "TRACES_FILTER_QUERY_PARSE_ERROR", selectors=bad)
    unknown_field = [{"source_kind": "span", "filter": "no_such_field = 1"}]
    await refused(400, "SEARCH_BAD_REQUEST", selectors=unknown_field)
    await refused(400, "VALIDATION_ERROR", selectors=[{"source_kind": "metric"}])
    await refused(404, "JUDGE_NOT_FOUND", definitions=[{"slug": "nope"}])
    await refused(400, "VALIDATION_ERROR", definitions=[{"slug": "tone", "mapping": {"x": "y"}}])
    await refused(400, "PIPELINE_CONFIG_ALREADY_EXISTS", definitions=[{"slug": "tone"}] * 2)
    over = {"slug": "tone", "sampling": {"type": "probabilistic", "percentage": 101}}
    await refused(422, "VALIDATION_ERROR", definitions=[over])
    await refused(422, "VALIDATION_ERROR", name="x" * 501)
    surrogate = b'{"name": "\\ud800", "selectors": [], "definitions": []}'
    resp = await client.post(
        PIPELINES, content=surrogate, headers={"content-type": "application/json"}
    )
    assert 400 <= resp.status_code < 500, resp.text
    deep = {"page": 2**62, "page_size": 1000}
    obs_error(await client.get(PIPELINES, params=deep), 400, "VALIDATION_ERROR")

    pipeline = await create_pipeline(client)
    await refused(409, "PIPELINE_ALREADY_EXISTS", name="support qa!")
    url = f"{PIPELINES}/{pipeline['id']}"
    obs_error(
        await client.put(url, json={"selectors": bad}), 400, "TRACES_FILTER_QUERY_PARSE_ERROR"
    )
    async with make_client(app, other.key) as foreign:
        assert (await foreign.get(PIPELINES)).json()["pipelines"]["count"] == 0
        obs_error(await foreign.get(url), 404, "PIPELINE_NOT_FOUND")
        obs_error(await foreign.put(url, json={"enabled": False}), 404, "PIPELINE_NOT_FOUND")
        obs_error(await foreign.delete(url), 404, "PIPELINE_NOT_FOUND")
        # Another workspace's judge cannot be named.
        body = {"name": "p", "selectors": [], "definitions": [{"slug": "tone"}]}
        obs_error(await foreign.post(PIPELINES, json=body), 404, "JUDGE_NOT_FOUND")


async def test_runs_chain_while_enabled(app: FastAPI, client: httpx.AsyncClient) -> None:
    await new_judge(client)
    pipeline = await create_pipeline(client)

    async def pending() -> tuple[str | None, list[Job]]:
        async with app.state.services.db.transaction() as work:
            row = await work.session.get(Pipeline, pipeline["id"])
            jobs = (await work.session.execute(select(Job).order_by(Job.created_at))).scalars()
            return (row.job_id if row else None), list(jobs)

    job_id, jobs = await pending()
    assert [(j.id, j.status) for j in jobs] == [(job_id, "queued")]
    await run_jobs(app, 1.0, concurrency=1)
    # The run caught up (nothing to judge) and queued the next, later.
    job_id, jobs = await pending()
    assert [j.status for j in jobs] == ["succeeded", "queued"] and jobs[1].id == job_id
    assert jobs[1].payload["idle"] == 1
    # Enabling an enabled pipeline starts no second chain; disabling ends it at its next run.
    await client.put(f"{PIPELINES}/{pipeline['id']}", json={"enabled": True})
    assert len((await pending())[1]) == 2
    await client.put(f"{PIPELINES}/{pipeline['id']}", json={"enabled": False})
    async with app.state.services.db.transaction() as work:
        await work.session.get(Job, job_id)
        job = await work.session.get(Job, job_id)
        assert job is not None
        job.run_at = jobs[0].run_at  # due now
    await run_jobs(app, 1.0, concurrency=1)
    job_id, jobs = await pending()
    assert job_id is None and [j.status for j in jobs] == ["succeeded", "succeeded"]
    # Enabled again: a new chain.
    await client.put(f"{PIPELINES}/{pipeline['id']}", json={"enabled": True})
    job_id, jobs = await pending()
    assert len(jobs) == 3 and jobs[2].id == job_id and jobs[2].status == "queued"
