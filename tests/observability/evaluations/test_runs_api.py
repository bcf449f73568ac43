"""Evaluations v2 over HTTP: a run of an evaluation over a dataset on the builtin judge model,
its records, scores and statistics; the run job resumed without scoring a record twice."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, insert, select

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.core.auth.principal import Tenant
from maestrale.core.jobs.worker import JobContext
from maestrale.observability.evaluations.runs.tasks import EvaluationRunTasks
from maestrale.observability.evaluations.tables import EvalScore
from maestrale.observability.judges import judging
from maestrale.observability.judges.schemas import JudgeOutput
from maestrale.telemetry.tables import TelemetrySpan
from tests.batch.support import run_jobs
from tests.observability.evaluations.support import OBS, dataset, evaluation, start_run
from tests.support.app_fixtures import TenantKey
from tests.support.job_context import JobCtx

pytestmark = pytest.mark.both_databases("maestrale.observability.evaluations.runs.repository")

RUNS = f"{OBS}/evaluation-runs_v2"


async def test_a_run_scores_every_record_with_each_evaluator(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    created = await evaluation(client)
    assert [e["name"] for e in created["evaluators"]] == ["tone", "quality"]
    assert created["metadata_"] == {"team": "care"} and created["slug"] == "tone-check"
    ds = await dataset(client, "hello there", "thanks a lot")
    empty: dict[str, Any] = {"payload": {"messages": []}, "properties": {}}
    assert (await client.post(f"{OBS}/datasets/{ds}/records", json=empty)).status_code == 201
    run = await start_run(client, ds, tags=["nightly"], metadata_={"commit": "abc"})
    assert run["status"] == "running" and run["dataset_id"] == ds
    assert run["tags"] == ["nightly"] and run["metadata_"] == {"commit": "abc"}
    await run_jobs(app)

    got = (await client.get(f"{RUNS}/{run['id']}")).json()
    assert got["status"] == "completed"
    # The record with no message is a failed score for each evaluator, not a crash.
    assert got["statistics"]["tone"] == {
        "type": "categorical",
        "frequencies": {"polite": 2},
        "mode": ["polite"],
        "count": 2,
        "values": None,
        "excluded_count": 1,
        "confusion_matrix": None,
    }
    quality = got["statistics"]["quality"]
    assert quality["type"] == "numeric" and quality["count"] == 2
    assert (quality["avg"], quality["min"], quality["max"], quality["std"]) == (1.0, 1.0, 1.0, 0.0)
    stats = (await client.get(f"{RUNS}/{run['id']}/statistics")).json()
    assert stats["run_id"] == run["id"] and stats["statistics"] == got["statistics"]

    records = (await client.post(f"{RUNS}/{run['id']}/records/search", json={})).json()
    assert records["records"]["count"] == 3
    first = records["records"]["results"][0]
    assert first["input"]["messages"] == [{"role": "user", "content": "hello there"}]
    generation = first["output_record"]["generations"][0]
    assert generation["status"] == "completed"
    assert generation["output"] == {"role": "user", "content": "hello there"}
    tone = generation["scores"]["tone"][0]
    assert (tone["value"], tone["status"], tone["rationale"]) == ("polite", "completed", "echo")
    assert generation["scores"]["quality"][0]["value"] == 1.0
    last = records["records"]["results"][2]["output_record"]["generations"][0]
    assert last["status"] == "failed" and "no messages" in last["error"]
    one = await client.get(f"{RUNS}/{run['id']}/records/{first['id']}")
    assert one.json() == first
    # Each judge call went through the gateway: accounted and recorded as an event.
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        stmt = select(func.count()).where(ChatCompletionEvent.source == "judge")
        assert (await work.session.execute(stmt)).scalar_one() == 4


async def test_score_filters_sorts_and_run_searches(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def by_length(calls: Any, caller: Any, definition: Any, messages: Any, *a: Any) -> Any:
        text = messages[-1]["content"]
        if definition.output.type == "REGRESSION":
            return JudgeOutput(analysis="length", answer=float(len(text)))
        return JudgeOutput(analysis="tone", answer="rude" if "!" in text else "polite")

    monkeypatch.setattr(judging, "run_judge", by_length)
    await evaluation(client)
    ds = await dataset(client, "a", "abc!", "abcde")
    run = await start_run(client, ds, tags=["nightly", "gpu"], metadata_={"n": 3, "who": "ci"})
    other = await start_run(client, ds, "other", metadata_={"n": 1})
    await run_jobs(app)
    records = f"{RUNS}/{run['id']}/records/search"

    def gte(value: float | str, op: str = "gte") -> dict[str, Any]:
        name = "tone" if isinstance(value, str) else "quality"
        f = {"evaluator_name": name, "metric": "avg", "operator": op, "value": value}
        return {"score_filters": {"filters": [f]}}

    kept = (await client.post(records, json=gte(3))).json()["records"]
    assert [r["input"]["messages"][0]["content"] for r in kept["results"]] == ["abc!", "abcde"]
    rude = (await client.post(records, json=gte("rude", "eq"))).json()["records"]
    assert rude["count"] == 1
    by_score = {"sort": {"kind": "score", "evaluator_name": "quality", "direction": "desc"}}
    page = (await client.post(records, json=by_score, params={"page_size": 2})).json()["records"]
    assert [r["input"]["messages"][0]["content"] for r in page["results"]] == ["abcde", "abc!"]
    assert page["count"] == 3 and page["next"].endswith("page=2&page_size=2")
    computed = await client.post(f"{RUNS}/{run['id']}/statistics/compute", json=gte(3))
    assert computed.json()["statistics"]["quality"]["avg"] == 4.5
    assert computed.json()["statistics"]["tone"]["frequencies"] == {"polite": 1, "rude": 1}

    async def names(body: dict[str, Any], url: str = f"{RUNS}/search") -> list[str]:
        resp = await client.post(url, json=body)
        assert resp.status_code == 200, resp.text
        return [r["name"] for r in resp.json()["runs"]["results"]]

    assert await names({}) == ["other", "baseline"]
    assert await names({"tags": {"values": ["nightly", "gpu"]}}) == ["baseline"]
    assert await names({"tags": {"combinator": "or", "values": ["x", "gpu"]}}) == ["baseline"]
    meta = {"filters": [{"key": "n", "operator": "gt", "value": 2}]}
    assert await names({"metadata": meta}) == ["baseline"]
    meta = {"filters": [{"key": "who", "operator": "eq", "value": "ci"}]}
    assert await names({"metadata": meta}) == ["baseline"]
    assert await names({"run_ids": [other["id"]]}) == ["other"]
    assert await names({"project_ids": [run["evaluation_id"]]}) == []
    assert await names(gte(3.5, "gt")) == []  # the runs' average length is 10/3
    assert await names(gte(3.3)) == ["other", "baseline"]
    refs = (await client.post(f"{RUNS}/search", json={})).json()["runs"]["results"][0]
    assert refs["evaluation"]["slug"] == "tone-check" and refs["project"]["slug"] == "support"
    by_eval = f"{OBS}/evaluations_v2/tone-check/runs/search"
    assert await names({"creator_ids": [run["creator_id"]]}, by_eval) == ["other", "baseline"]

    # Optimizations: trials are runs, observed by the objective; the outcome is the best.
    spec = {"evaluator": "quality", "metric": "avg", "direction": "maximize"}
    body = {"name": "shorter", "evaluation": "tone-check", "objective_spec": spec, "tags": ["t"]}
    opt = (await client.post(f"{OBS}/optimizations", json=body)).json()
    assert opt["evaluation"]["slug"] == "tone-check" and opt["outcome"] is None
    url = f"{OBS}/optimizations/{opt['id']}"
    trial = await client.post(f"{url}/trials", json={"run_id": run["id"], "hypothesis": "h"})
    assert trial.status_code == 201, trial.text
    assert trial.json()["observations"][0]["score"] == pytest.approx(10 / 3)
    fetched = (await client.get(url)).json()
    assert fetched["status"] == "completed" and fetched["outcome"]["best_score"] == pytest.approx(
        10 / 3
    )
    trials = (await client.get(f"{url}/trials")).json()["trials"]
    assert trials["count"] == 1 and trials["results"][0]["algorithm_trial_key"] == "trial-1"
    listed = await client.get(f"{OBS}/optimizations", params={"tags": "t", "project": "support"})
    assert listed.json()["optimizations"]["count"] == 1


async def test_a_resumed_run_scores_each_record_once(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await evaluation(client)
    run = await start_run(client, await dataset(client, "one", "two", "three"))
    calls: Counter[str] = Counter()
    real = judging.run_judge
    died = False

    async def flaky(gateway: Any, caller: Any, definition: Any, messages: Any, *a: Any) -> Any:
        nonlocal died
        calls[messages[0]["content"]] += 1
        if messages[0]["content"] == "two" and definition.name == "quality" and not died:
            died = True
            raise RuntimeError("worker killed")
        return await real(gateway, caller, definition, messages, *a)

    monkeypatch.setattr(judging, "run_judge", flaky)
    tasks = EvaluationRunTasks(app.state.services.platform_calls)
    ctx = cast(JobContext, JobCtx(app.state.services.db, {"run_id": run["id"]}))
    with pytest.raises(RuntimeError):
        await tasks.run(ctx)
    assert (await client.get(f"{RUNS}/{run['id']}")).json()["status"] == "running"
    assert await tasks.run(ctx) == {"status": "completed", "scored": 2}
    # Two judges per record; "two" was under way when the worker died: judged again in full.
    assert calls == Counter({"one": 2, "two": 4, "three": 2})
    async with app.state.services.db.transaction() as work:
        stmt = select(func.count()).where(EvalScore.run_id == run["id"])
        assert (await work.session.execute(stmt)).scalar_one() == 6
    assert (await client.get(f"{RUNS}/{run['id']}")).json()["status"] == "completed"


def _span(tenant: Tenant, span_id: str, name: str, **attributes: Any) -> dict[str, Any]:
    return {
        "organization_id": tenant.organization_id,
        "workspace_id": tenant.workspace_id,
        "trace_id": "t" * 32,
        "span_id": span_id,
        "start_ns": 10**18 + int(span_id[-1]),
        "end_ns": 10**18 + 10,
        "duration_ns": 10,
        "name": name,
        "kind": "SPAN_KIND_CLIENT",
        "attributes": attributes,
    }


async def test_a_run_over_the_spans_a_search_matches(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant, other: TenantKey
) -> None:
    asked = [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
    async with app.state.services.db.transaction() as work:
        await work.session.execute(
            insert(TelemetrySpan),
            [
                _span(tenant, "s1", "chat mistral", **{"gen_ai.input.messages": asked}),
                _span(tenant, "s2", "execute_tool search"),
                # Another workspace's span matches, and is never an input.
                _span(other.tenant, "s3", "chat mistral"),
            ],
        )
    await evaluation(client)
    run = await start_run(client, span_search={"expression": "span_name LIKE 'chat%'"})
    assert run["run_info"] == {"source": {"span_search": "span_name LIKE 'chat%'"}}
    await run_jobs(app)
    records = (await client.post(f"{RUNS}/{run['id']}/records/search")).json()["records"]
    assert records["count"] == 1
    record = records["results"][0]
    assert record["input"]["messages"] == [{"role": "user", "content": "hi"}]
    assert record["input"]["properties"]["span_id"] == "s1"
    assert record["output_record"]["generations"][0]["scores"]["tone"][0]["value"] == "polite"
    resp = await client.post(
        f"{OBS}/evaluations_v2/tone-check/runs",
        json={"name": "r", "span_search": {"expression": "span_name LIKE"}},
    )
    assert resp.status_code == 400, resp.text
    both = {"name": "r", "dataset_id": "d", "span_search": {"expression": ""}}
    resp = await client.post(f"{OBS}/evaluations_v2/tone-check/runs", json=both)
    assert resp.status_code == 422
