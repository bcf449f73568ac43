"""A pipeline judging the spans that arrive: matching spans only, each judge once per span (a
run killed mid-way resumes from its watermark), verdicts searched, aggregated and shown as
pipeline results."""

from __future__ import annotations

import json
from typing import Any, cast

import httpx
import pytest
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from maestrale.core.jobs.worker import JobContext
from maestrale.observability.judges import judging
from maestrale.observability.pipelines.repository import PipelineRepository
from maestrale.observability.pipelines.tasks import PipelineTasks
from maestrale.observability.span_evaluations.tables import SpanEvaluation
from maestrale.telemetry.tables import TelemetryTrace
from tests.observability.events_seed import obs_error
from tests.observability.pipelines.support import create_pipeline, verdicts
from tests.observability.test_judges_api import SCORE, new_judge
from tests.observability.traces.seed import BASE, MINUTE, NS, insert, span, span_id, trace
from tests.observability.traces.seed import trace_id as tid
from tests.support.job_context import JobCtx

pytestmark = pytest.mark.both_databases(
    "maestrale.observability.pipelines.repository",
    "maestrale.observability.span_evaluations.repository",
)

EVALUATIONS = "/v1/observability/spans/evaluations"
ASKED = [{"role": "user", "parts": [{"type": "text", "content": "hello"}]}]
ANSWERED = [{"role": "assistant", "parts": [{"type": "text", "content": "hi there"}]}]


async def test_pipeline_judges_arriving_spans_once(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    await insert(app, trace(tenant, 1, BASE), span(tenant, 1, 1, BASE, NS))  # before: not judged
    await new_judge(client)
    await new_judge(client, name="Helpfulness Score", output=SCORE)
    selectors = [{"source_kind": "span", "filter": "span_name = 'chat'"}]
    definitions = [{"slug": "tone"}, {"slug": "helpfulness-score"}]
    pipeline = await create_pipeline(client, selectors=selectors, definitions=definitions)
    messages = {"gen_ai.input.messages": json.dumps(ASKED), "gen_ai.output.messages": ANSWERED}
    await insert(
        app,
        trace(tenant, 2, BASE + MINUTE),
        span(tenant, 2, 2, BASE + MINUTE, NS, attributes=messages, conversation_id="c-1"),
        span(tenant, 2, 3, BASE + MINUTE, NS, name="retrieve"),  # not selected
        span(tenant, 2, 4, BASE + MINUTE, 2 * NS),
        span(tenant, 2, 5, BASE + MINUTE, 3 * NS, attributes={"app.k": "v"}),
    )
    calls: list[tuple[str, list[dict[str, Any]]]] = []
    real = judging.run_judge

    async def flaky(platform: Any, caller: Any, definition: Any, convo: Any, *a: Any) -> Any:
        calls.append((definition.name, convo))
        if len(calls) == 5:
            raise RuntimeError("worker killed")
        return await real(platform, caller, definition, convo, *a)

    monkeypatch.setattr(judging, "run_judge", flaky)
    tasks = PipelineTasks(app.state.services.platform_calls, batch=2, max_batches=1)
    ctx = JobCtx(app.state.services.db, {"pipeline_id": pipeline["id"]})
    # A run judges one batch (spans 2 and 4), then leaves the rest to the next run.
    assert await tasks.run(cast(JobContext, ctx)) == {"status": "behind", "evaluated": 4}
    with pytest.raises(RuntimeError):
        await tasks.run(cast(JobContext, ctx))
    # The second batch died with nothing written.
    assert [(v.span_id, v.evaluation_name) for v in await verdicts(app)] == [
        (span_id(2), "tone"),
        (span_id(2), "Helpfulness Score"),
        (span_id(4), "tone"),
        (span_id(4), "Helpfulness Score"),
    ]
    assert await tasks.run(cast(JobContext, ctx)) == {"status": "caught up", "evaluated": 2}
    assert len(calls) >= 7 and len(ctx.effects) == 2
    rows = await verdicts(app)
    assert sorted((v.span_id, v.evaluation_name) for v in rows) == sorted(
        (span_id(s), n) for s in (2, 4, 5) for n in ("tone", "Helpfulness Score")
    )
    # A span's messages, flattened; a span without them is judged on its attributes.
    assert calls[0][1] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi there"},
    ]
    assert '"app.k": "v"' in calls[-1][1][0]["content"]
    async with app.state.services.db.transaction() as work:
        summary = await work.session.get(TelemetryTrace, (tenant.workspace_id, tid(2)))
        assert summary is not None and summary.evaluation_count == 3
    # Caught up: a new run judges nothing.
    assert (await tasks.run(cast(JobContext, ctx)))["evaluated"] == 0

    # An older verdict on span 2: searched, but not the latest.
    old = {a.key: getattr(rows[0], a.key) for a in SpanEvaluation.__mapper__.column_attrs}
    old.update(id=None, timestamp_ns=BASE, score_label="rude", score_value=1.0)
    await insert(app, SpanEvaluation(**{**old, "pipeline_config_id": "x"}))

    async def search(path: str, expression: str, **params: Any) -> dict[str, Any]:
        resp = await client.post(
            f"{EVALUATIONS}/{path}", json={"search_expression": expression}, params=params
        )
        assert resp.status_code == 200, resp.text
        feed: dict[str, Any] = resp.json()["span_evaluations"]
        return feed

    tone = await search("search", "evaluation_name = 'tone'")
    assert [r["score_label"] for r in tone["results"]] == ["polite"] * 3 + ["rude"]
    first = tone["results"][0]
    assert (first["score_value"], first["explanation"], first["span_id"]) == (
        0.0,
        "echo",
        span_id(5),
    )
    assert first["metadata"]["pipeline_id"] == pipeline["id"] and first["trace_id"] == tid(2)
    paged = await search("search", "evaluation_name = 'tone'", page_size=3)
    assert paged["cursor"] and paged["next"]
    rest = await search("search", "evaluation_name = 'tone'", page_size=3, cursor=paged["cursor"])
    assert [r["score_label"] for r in rest["results"]] == ["rude"] and rest["cursor"] is None
    garbage = await client.post(f"{EVALUATIONS}/search", params={"cursor": paged["cursor"][:-3]})
    obs_error(garbage, 400, "VALIDATION_ERROR")
    latest = await search("search/latest", "score_label = 'rude' OR evaluation_name = 'tone'")
    assert [r["score_label"] for r in latest["results"]] == ["polite"] * 3
    scored = await search("search", "score_value >= 1 AND evaluation_name != 'tone'")
    assert {r["span_id"] for r in scored["results"]} == {span_id(2), span_id(4), span_id(5)}
    obs_error(
        await client.post(f"{EVALUATIONS}/search", json={"search_expression": "nope = 1"}),
        400,
        "SEARCH_BAD_REQUEST",
    )

    resp = await client.post(
        f"{EVALUATIONS}/aggregate",
        json={
            "metric": {"measure": "score_value", "aggregation": "avg"},
            "dimensions": ["evaluation_name"],
            "order_by": [{"field": "evaluation_name", "direction": "asc"}],
        },
    )
    assert resp.status_code == 200, resp.text
    assert [
        (r["dimensions"]["evaluation_name"], r["metric_value"]) for r in resp.json()["data"]
    ] == [
        ("Helpfulness Score", 1.0),
        ("tone", 0.25),
    ]

    fields = (await client.get(f"{EVALUATIONS}/fields")).json()["field_definitions"]
    assert {"evaluation_name", "score_value", "metadata"} <= {f["name"] for f in fields}
    names = await client.get(f"{EVALUATIONS}/fields/evaluation_name/options")
    assert sorted(names.json()["options"]) == ["Helpfulness Score", "tone"]
    assert (await client.get(f"{EVALUATIONS}/fields/score_value/options")).json() == {
        "options": None
    }
    obs_error(await client.get(f"{EVALUATIONS}/fields/nope/options"), 404, "FIELDS_NOT_FOUND")

    slugs = [c["slug"] for c in pipeline["pipeline_configs"]]
    resp = await client.post(
        "/v1/observability/pipeline-results/search",
        json={"pipeline_config_slugs": slugs, "search_expression": "duration_ns >= 2000000000"},
    )
    assert resp.status_code == 200, resp.text
    results = resp.json()["pipeline_results"]["results"]
    assert [(r["span_id"], r["duration_ns"]) for r in results] == [
        (span_id(5), 3 * NS),
        (span_id(4), 2 * NS),
    ]
    assert results[0]["judge_scores"] == {"tone": 0.0, "Helpfulness Score": 1.0}
    assert results[0]["judge_labels"] == {"tone": "polite"}
    assert results[0]["judge_explanations"] == {"tone": "echo", "Helpfulness Score": "echo"}
    obs_error(
        await client.post(
            "/v1/observability/pipeline-results/search", json={"pipeline_config_slugs": ["nope"]}
        ),
        404,
        "PIPELINE_CONFIG_NOT_FOUND",
    )

    # A span that arrives is read a run later, up to the newest row the previous run saw: a
    # lower row id than the newest may still be uncommitted (another process's writer).
    async def newest() -> int:
        async with app.state.services.db.transaction() as work:
            return await PipelineRepository(work.session, tenant).latest_span_row_id()

    ctx.payload["horizon"] = await newest()
    await insert(app, span(tenant, 2, 6, BASE + MINUTE, NS))
    assert (await tasks.run(cast(JobContext, ctx)))["evaluated"] == 0
    ctx.payload["horizon"] = await newest()
    assert (await tasks.run(cast(JobContext, ctx)))["evaluated"] == 2
    assert ctx.effects  # the next run is queued with this run's newest row as its horizon
