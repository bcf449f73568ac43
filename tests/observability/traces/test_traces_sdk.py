"""mistralai 3.x reads traces, spans and logs and aggregates spans: every answer parses into the
SDK's own models (GetTraces, GetTrace, GetSpans, GetSpan, GetLogs, Aggregation)."""

from __future__ import annotations

from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from tests.observability.traces.seed import BASE, MINUTE, NS, insert, log, span, trace, trace_id
from tests.support.live_sdk import sdk3_on_socket


async def test_the_sdk_reads_traces_spans_and_logs(app: FastAPI, tenant: Tenant) -> None:
    attributes = {"gen_ai.request.temperature": 0.2, "gen_ai.output.messages": [{"role": "a"}]}
    await insert(
        app,
        trace(tenant, 1, BASE, root_span_name="agent run", models_used=["m"]),
        trace(tenant, 2, BASE + MINUTE),
        span(tenant, 1, 1, BASE, 3 * NS, attributes=attributes),
        span(tenant, 2, 2, BASE + MINUTE, NS),
        log(tenant, BASE, "hello", trace_id=trace_id(1), attributes={"k": [1]}),
    )
    async with sdk3_on_socket(app) as ok:
        traces = "beta.observability.traces"
        first = await ok(f"{traces}.search", page_size=1)
        assert [t["trace_id"] for t in first["traces"]["results"]] == [trace_id(2)]
        rest = await ok(f"{traces}.search", page_size=1, cursor=first["traces"]["cursor"])
        assert rest["traces"]["results"][0]["root_span_name"] == "agent run"
        assert rest["traces"]["cursor"] is None

        got = await ok(f"{traces}.get_trace_by_id", trace_id=trace_id(1))
        assert got["models_used"] == ["m"]
        spans = await ok(f"{traces}.get_trace_spans", trace_id=trace_id(1))
        span_id = spans["spans"]["results"][0]["span_id"]
        one = await ok(f"{traces}.get_span_by_id", trace_id=trace_id(1), span_id=span_id)
        assert (one["request_temperature"], one["output_messages"]) == (0.2, '[{"role":"a"}]')

        found = await ok(
            "beta.observability.spans.search_spans",
            search_expression="duration_ns > 2000000000",
        )
        assert [s["trace_id"] for s in found["spans"]["results"]] == [trace_id(1)]
        logs = await ok("beta.observability.logs.search", order="asc")
        assert logs["logs"]["results"][0]["log_attributes"] == {"k": "[1]"}

        aggregated = await ok(
            "beta.observability.spans.aggregate",
            metric={"measure": "duration_ns", "aggregation": "p50"},
            time_dimension={"granularity": "minute"},
            from_="2026-01-01T00:00:00Z",
            to="2026-01-01T00:05:00Z",
        )
        assert [r["metric_value"] for r in aggregated["data"]] == [3 * NS, NS]
