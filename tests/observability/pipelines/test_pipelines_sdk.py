"""mistralai 3.x manages pipelines and reads what they judged: every answer parses into the
SDK's own models (Pipeline, PipelinesResponse, GetSpanEvaluations, GetPipelineResults,
GetSpanEvaluationFields, GetSpanEvaluationFieldOptions, Aggregation)."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from tests.batch.support import run_jobs
from tests.observability.test_judges_api import new_judge
from tests.observability.traces.seed import BASE, NS, insert, span, span_id, trace
from tests.support.live_sdk import sdk3_on_socket


async def test_the_sdk_runs_pipelines_and_reads_their_results(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    await new_judge(client)
    async with sdk3_on_socket(app) as ok:
        pipelines = "beta.observability.evaluations"
        created = await ok(
            f"{pipelines}.create_pipeline",
            name="Tone watch",
            selectors=[{"source_kind": "span", "filter": "duration_ns > 0"}],
            definitions=[
                {"slug": "tone", "sampling": {"type": "probabilistic", "percentage": 100}}
            ],
        )
        [config] = created["pipeline_configs"]
        listed = await ok(f"{pipelines}.list_pipelines", enabled=True)
        assert [p["id"] for p in listed["pipelines"]["results"]] == [created["id"]]
        await insert(app, trace(tenant, 1, BASE), span(tenant, 1, 1, BASE, NS))
        await run_jobs(app, 1.0, concurrency=1)

        spans = "beta.observability.spans"
        found = await ok(f"{spans}.search_span_evaluations", search_expression="score_value = 0")
        [verdict] = found["span_evaluations"]["results"]
        assert (verdict["span_id"], verdict["score_label"]) == (span_id(1), "polite")
        latest = await ok(f"{spans}.search_latest_span_evaluations")
        assert latest["span_evaluations"]["results"] == [verdict]
        results = await ok(
            f"{spans}.search_pipeline_results", pipeline_config_slugs=[config["slug"]]
        )
        assert results["pipeline_results"]["results"][0]["judge_labels"] == {"tone": "polite"}
        fields = await ok(f"{spans}.list_span_eval_fields")
        assert any(f["name"] == "score_label" for f in fields["field_definitions"])
        options = await ok(f"{spans}.fetch_span_eval_field_options", field_name="score_label")
        assert options["options"] == ["polite"]
        counted = await ok(
            f"{spans}.aggregate_span_evaluations",
            metric={"measure": "score_value", "aggregation": "count"},
        )
        assert counted["data"][0]["metric_value"] == 1

        updated = await ok(f"{pipelines}.update_pipeline", pipeline_id=created["id"], enabled=False)
        assert updated["enabled"] is False
        got = await ok(f"{pipelines}.get_pipeline", pipeline_id=created["id"])
        assert got["pipeline_configs"][0]["id"] == config["id"]
        await ok(f"{pipelines}.delete_pipeline", pipeline_id=created["id"])
