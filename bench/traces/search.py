"""Span search latency at scale, through a live `maestrale serve` on Postgres.

Generates `--spans` spans once (kept in the `--pg` database for later runs; more are added when
a run asks for more), straight in SQL (`INSERT ... SELECT FROM generate_series`, 1M rows per
transaction): 60% in the server's default workspace (the benchmark key's) and the rest in four
others, start times spread evenly over 30 days, traces of 8 spans (an agent root, 3 LLM calls
with GenAI columns and attributes, tools, HTTP), 4 models, 4 services, 5% errors. Then times
`POST /v1/observability/spans/search` (p50/p95 over --runs): filtered pages (a search expression
over a time range) and the next page through the cursor.

The issue's target: p50 <= 100 ms at 10 million spans.

    .venv/bin/python -m bench.traces.search [--spans 1000000] [--runs 20] \
        [--pg postgresql+asyncpg://postgres@127.0.0.1:5432/maestrale_bench_spans]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.observability.run import _pg, ensure_pg_database, query, timed
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server

PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/maestrale_bench_spans"
CHUNK = 1_000_000
DAY_NS = 86_400 * 10**9
SPAN_OF = 30 * DAY_NS

# One row per g in [first, last]: g / 8 is the trace, g % 8 the span's role in it. The bench
# workspace gets traces whose number % 5 < 3 (60%); the others a workspace each.
INSERT = """
INSERT INTO telemetry_spans (
    organization_id, workspace_id, user_id, service_account_id, trace_id, span_id,
    parent_span_id, trace_state, start_ns, end_ns, duration_ns, name, kind, service_name,
    status_code, status_message, error_type, operation_name, provider_name, request_model,
    response_model, response_id, conversation_id, agent_id, agent_name, workflow_name,
    tool_name, tool_type, execution_id, usage_input_tokens, usage_output_tokens,
    usage_cache_read_input_tokens, usage_cache_creation_input_tokens, attributes,
    resource_attributes, scope_name, scope_version, events, links)
SELECT
    CASE WHEN t % 5 < 3 THEN $3 ELSE 'org-' || (t % 5) END,
    CASE WHEN t % 5 < 3 THEN $4 ELSE 'ws-' || (t % 5) END,
    '', '', md5('t' || t), substr(md5('s' || g), 1, 16),
    CASE WHEN r = 0 THEN '' ELSE substr(md5('s' || (g - r)), 1, 16) END, '',
    st, st + dur, dur,
    CASE WHEN llm THEN 'chat ' || model WHEN tool THEN 'execute_tool ' || tname
         WHEN r = 0 THEN 'invoke_agent support' ELSE 'GET /orders' END,
    CASE WHEN r = 0 THEN 'SPAN_KIND_SERVER' ELSE 'SPAN_KIND_CLIENT' END,
    service, CASE WHEN err THEN 'Error' ELSE 'Unset' END,
    CASE WHEN err THEN 'upstream timeout' ELSE '' END,
    CASE WHEN err THEN 'TimeoutError' ELSE '' END,
    CASE WHEN llm THEN 'chat' WHEN tool THEN 'execute_tool'
         WHEN r = 0 THEN 'invoke_agent' ELSE '' END,
    CASE WHEN llm THEN 'mistral_ai' ELSE '' END,
    CASE WHEN llm THEN model ELSE '' END, CASE WHEN llm THEN model ELSE '' END,
    CASE WHEN llm THEN 'cmpl-' || g ELSE '' END,
    'conv-' || t, '', CASE WHEN r = 0 THEN 'support' ELSE '' END, '',
    CASE WHEN tool THEN tname ELSE '' END, CASE WHEN tool THEN 'function' ELSE '' END, '',
    CASE WHEN llm THEN 50 + (h % 4000) ELSE 0 END, CASE WHEN llm THEN 10 + (h % 800) ELSE 0 END,
    0, 0,
    CASE WHEN llm THEN jsonb_build_object(
        'gen_ai.operation.name', 'chat', 'gen_ai.request.model', model,
        'gen_ai.conversation.id', 'conv-' || t, 'gen_ai.usage.input_tokens', 50 + (h % 4000),
        'gen_ai.input.messages',
        '[{"role":"user","parts":[{"type":"text","content":"Where is my order ' || t || '?"}]}]',
        'gen_ai.output.messages',
        '[{"role":"assistant","parts":[{"type":"text","content":"It ships tomorrow."}]}]')
    WHEN tool THEN jsonb_build_object('gen_ai.operation.name', 'execute_tool',
        'gen_ai.tool.name', tname)
    ELSE jsonb_build_object('http.route', '/orders') END,
    jsonb_build_object('service.name', service, 'deployment.environment.name', 'prod'),
    'bench', '1', '[]'::jsonb, '[]'::jsonb
FROM (
    SELECT g, g / 8 AS t, g % 8 AS r, (hashtext(g::text)::bigint & 2147483647) AS h,
           $5::bigint + (g * $6::bigint) AS st,
           (g % 8) IN (1, 3, 5) AS llm, (g % 8) IN (2, 4) AS tool,
           (g % 8) = 5 AND (g / 8) % 20 = 0 AS err,
           1000000 + (hashtext('d' || g)::bigint & 2147483647) % 2000000000 AS dur,
           (ARRAY['mistral-small-latest', 'mistral-medium-latest', 'mistral-large-latest',
                  'codestral'])[1 + (g / 8) % 4] AS model,
           (ARRAY['web_search', 'get_weather', 'lookup_order', 'send_email', 'sql_query'])
               [1 + g % 5] AS tname,
           (ARRAY['shop-assistant', 'support-bot', 'docs-qa', 'billing-agent'])
               [1 + (g / 8 / 5) % 4] AS service
    FROM generate_series($1::bigint, $2::bigint) AS g
) AS s
"""


async def generate(url: str, have: int, want: int, org: str, ws: str, start_ns: int) -> None:
    """Add spans number `have` to `want` - 1 (numbers fix their time: rerunning is stable)."""
    import asyncpg

    from bench.observability.generate import pg_dsn

    step = SPAN_OF // max(want, 1)
    conn = await asyncpg.connect(pg_dsn(url))
    try:
        for first in range(have, want, CHUNK):
            last = min(first + CHUNK, want) - 1
            started = time.perf_counter()
            await conn.execute(INSERT, first, last, org, ws, start_ns, step)
            rows = last - first + 1
            seconds = time.perf_counter() - started
            print(f"  +{rows} spans in {seconds:.1f} s ({rows / seconds:,.0f}/s)", flush=True)
        await conn.execute("ANALYZE telemetry_spans")
    finally:
        await conn.close()


def measure(base: str, runs: int, now: datetime, spans: int) -> None:
    def search(expression: str | None, days: float, cursor: str | None = None) -> httpx.Response:
        params: dict[str, Any] = {
            "from": (now - timedelta(days=days)).isoformat(),
            "to": now.isoformat(),
            "page_size": 50,
        }
        if cursor:
            params["cursor"] = cursor
        return http.post(
            "/v1/observability/spans/search",
            params=params,
            json={"search_expression": expression},
        )

    recent = int(spans * 0.99) // 8  # a trace of the last day, of the bench workspace
    recent -= recent % 5
    cases: list[tuple[str, str | None, float]] = [
        ("no expression, last 30 days", None, 30),
        (
            "request_model = large AND duration > 1.5 s, last day",
            "request_model = 'mistral-large-latest' AND duration_ns > 1500000000",
            1,
        ),
        ("status_code = Error, last 7 days", "status_code = 'Error'", 7),
        (
            "service CONTAINS 'billing' AND operation = chat, last 30 days",
            "service_name CONTAINS 'billing' AND operation_name = 'chat'",
            30,
        ),
        (
            "span_attributes['gen_ai.conversation.id'] = one conv, last day",
            f"span_attributes['gen_ai.conversation.id'] = 'conv-{recent}'",
            1,
        ),
        # The worst cases: few or no matches over the whole range (every span of it is read).
        (
            "conversation_id = one conv, last 30 days (column, no index)",
            f"conversation_id = 'conv-{recent}'",
            30,
        ),
        ("request_model = absent model, last 30 days", "request_model = 'nope'", 30),
    ]
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with httpx.Client(base_url=base, headers=headers, timeout=600) as http:
        for label, expression, days in cases:
            resp = timed(label, runs, functools.partial(search, expression, days), ok=(200, 408))
            if resp.status_code != 200:
                print(f"    {resp.json()}")
                continue
            page = resp.json()["spans"]
            print(f"    {len(page['results'])} on the page")
            if page.get("cursor") and expression is not None and days == 1:
                again = functools.partial(search, expression, days, page["cursor"])
                timed("  same, page 2 via cursor", runs, again)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--generate-only", action="store_true")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/maestrale-bench-spans"))
    parser.add_argument("--pg", default=PG)
    args = parser.parse_args()
    asyncio.run(ensure_pg_database(args.pg))
    data_dir = args.dir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    proc, base = start_server(data_dir, env={"MAESTRALE_DATABASE_URL": args.pg})  # migrates
    try:
        org, ws = query(
            args.pg, "SELECT organization_id, id FROM workspaces WHERE is_default LIMIT 1"
        )[0]
        have = query(args.pg, "SELECT count(*) FROM telemetry_spans")[0][0]
        # The time origin is kept in the database, so that added spans continue the series.
        now = datetime.now(UTC)
        first = asyncio.run(_pg(args.pg, "SELECT min(start_ns) FROM telemetry_spans"))[0][0]
        start_ns = first if first is not None else int(now.timestamp() * 1e9) - SPAN_OF
        if have < args.spans:
            print(f"generating {args.spans - have} spans ...", flush=True)
            started = time.perf_counter()
            asyncio.run(generate(args.pg, have, args.spans, org, ws, start_ns))
            print(f"generated in {time.perf_counter() - started:.0f} s")
        mine = query(args.pg, f"SELECT count(*) FROM telemetry_spans WHERE workspace_id = '{ws}'")
        print(f"postgres: {max(have, args.spans)} spans, {mine[0][0]} in the bench workspace")
        if not args.generate_only:
            end = datetime.fromtimestamp((start_ns + SPAN_OF) / 1e9, UTC)
            measure(base, args.runs, end, max(have, args.spans))
    finally:
        stop_server(proc)


if __name__ == "__main__":
    main()
