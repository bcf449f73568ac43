"""Searches of traces, spans and logs over rows written directly: cursor pages, time ranges,
gets and their serialization, another workspace's trace, and refused input."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from tests.observability.traces.seed import BASE, MINUTE, NS, insert, log, span, trace, trace_id
from tests.support.app_fixtures import TenantKey

pytestmark = pytest.mark.both_databases("maestrale.observability.traces.repository")

OBS = "/v1/observability"


def ids(page: dict[str, Any], key: str) -> list[str]:
    return [r["trace_id"] for r in page[key]["results"]]


async def test_trace_pages_follow_the_cursor_newest_first(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant, other: TenantKey
) -> None:
    await insert(
        app,
        *(trace(tenant, n, BASE + n * MINUTE, service_name=f"svc-{n % 2}") for n in range(5)),
        # The same start as trace 4: the trace id breaks the tie.
        trace(tenant, 9, BASE + 4 * MINUTE),
        trace(other.tenant, 7, BASE + 2 * MINUTE),
    )
    seen: list[str] = []
    cursor = None
    for _ in range(5):
        params: dict[str, Any] = {"page_size": 2, **({"cursor": cursor} if cursor else {})}
        page = (await client.post(f"{OBS}/traces/search", params=params, json={})).json()
        seen += ids(page, "traces")
        cursor = page["traces"]["cursor"]
        if cursor is None:
            assert page["traces"]["next"] is None
            break
        assert page["traces"]["next"].startswith(f"{OBS}/traces/search?")
    assert seen == [trace_id(n) for n in (9, 4, 3, 2, 1, 0)]

    within = await client.post(
        f"{OBS}/traces/search",
        params={"from": "2026-01-01T00:01:00Z", "to": "2026-01-01T00:03:00Z"},
        json={"search_expression": "service_name = 'svc-1'"},
    )
    assert ids(within.json(), "traces") == [trace_id(1)]


async def test_a_trace_its_spans_and_a_span(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant, other: TenantKey
) -> None:
    attributes = {
        "gen_ai.request.temperature": 0.5,
        "gen_ai.request.max_tokens": 64,
        "gen_ai.request.stop_sequences": ["\n"],
        "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}],
        "gen_ai.system_instructions": "be brief",
        "x": 3,
    }
    await insert(
        app,
        trace(tenant, 1, BASE, user_id="u1", models_used=["m"], llm_call_count=1),
        span(tenant, 1, 2, BASE + 10, 5, parent_span_id="0000000000000001", attributes=attributes),
        span(tenant, 1, 1, BASE, 100, resource_attributes={"service.name": "svc", "n": 1.5}),
        trace(other.tenant, 2, BASE),
        span(other.tenant, 2, 3, BASE, 1),
    )
    got = (await client.get(f"{OBS}/traces/{trace_id(1).upper()}")).json()
    assert (got["trace_id"], got["customer_id"]) == (trace_id(1), tenant.organization_id)
    assert (got["user_id"], got["models_used"], got["llm_call_count"]) == ("u1", ["m"], 1)
    assert got["start_time"] == "2026-01-01T00:00:00.000000Z"

    spans = (await client.get(f"{OBS}/traces/{trace_id(1)}/spans")).json()["spans"]
    assert [s["span_id"] for s in spans["results"]] == ["0000000000000001", "0000000000000002"]
    assert spans["results"][0]["resource_attributes"] == {"service.name": "svc", "n": "1.5"}

    one = (await client.get(f"{OBS}/traces/{trace_id(1)}/spans/0000000000000002")).json()
    assert (one["request_temperature"], one["request_top_p"]) == (0.5, None)
    assert (one["request_max_tokens"], one["request_seed"]) == (64, 0)
    assert one["request_stop_sequences"] == ["\n"]
    assert one["system_instructions"] == "be brief"
    assert '"content":"hi"' in one["input_messages"]
    assert one["span_attributes"]["x"] == "3"
    assert one["span_attributes"]["gen_ai.request.stop_sequences"] == '["\\n"]'

    for path in (
        f"traces/{trace_id(2)}",
        f"traces/{trace_id(2)}/spans",
        f"traces/{trace_id(2)}/spans/0000000000000003",
        "traces/not-a-trace",
        f"traces/{trace_id(1)}/spans/ffff",
    ):
        missing = await client.get(f"{OBS}/{path}")
        assert missing.status_code == 404, path
        assert missing.json()["detail"]["error_code"] == "SEARCH_NOT_FOUND"


async def test_spans_and_logs_search(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    await insert(
        app,
        *(span(tenant, 1, n, BASE + n * NS, n, request_model=f"m{n % 2}") for n in range(1, 5)),
        *(log(tenant, BASE + n * NS, f"line {n}", severity_text="INFO") for n in range(3)),
    )
    found = await client.post(
        f"{OBS}/spans/search", json={"search_expression": "request_model = 'm1'"}
    )
    assert [s["span_id"][-1] for s in found.json()["spans"]["results"]] == ["3", "1"]

    oldest = await client.post(f"{OBS}/logs/search", params={"page_size": 2}, json={"order": "asc"})
    first = oldest.json()["logs"]
    assert [r["body"] for r in first["results"]] == ["line 0", "line 1"]
    rest = await client.post(
        f"{OBS}/logs/search", params={"cursor": first["cursor"]}, json={"order": "asc"}
    )
    assert [r["body"] for r in rest.json()["logs"]["results"]] == ["line 2"]
    newest = await client.post(f"{OBS}/logs/search", json={})
    assert newest.json()["logs"]["results"][0]["timestamp"] == "2026-01-01T00:00:02.000000Z"
    # A cursor pages the search it came from, in its order.
    other_order = await client.post(
        f"{OBS}/logs/search", params={"cursor": first["cursor"]}, json={"order": "desc"}
    )
    assert other_order.status_code == 400
