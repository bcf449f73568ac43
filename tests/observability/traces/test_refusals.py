"""Refused input of the trace, span and log routes: a 400 (or a 422 for a body that does not
parse) in the group's error shape, before any SQL that differs between the databases."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from maestrale.core.pagination import encode_cursor
from maestrale.observability.traces import aggregate_repository
from tests.observability.traces.seed import BASE, insert, span

OBS = "/v1/observability"
P50 = {"measure": "duration_ns", "aggregation": "p50"}
REFUSED: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("traces/search", {"cursor": "garbage!"}, {}),
    (
        "traces/search",
        {"cursor": encode_cursor({"s": "traces:desc", "t": 2**64 - 1, "k": "a"})},
        {},
    ),
    # Another search's cursor.
    ("traces/search", {"cursor": encode_cursor({"s": "spans:desc", "t": 1, "k": 1})}, {}),
    ("traces/search", {"page_size": 0}, {}),
    ("spans/search", {"page_size": 1001}, {}),
    ("spans/search", {"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, {}),
    ("spans/search", {}, {"search_expression": "no_such_field = 1"}),
    ("spans/aggregate", {}, {"metric": {"measure": "span_name", "aggregation": "avg"}}),
    ("spans/aggregate", {}, {"metric": {"measure": "nope", "aggregation": "count"}}),
    ("traces/aggregate", {}, {"metric": P50, "dimensions": ["x.y"]}),
    ("spans/aggregate", {}, {"metric": P50, "dimensions": ["span_attributes['a\"b']"]}),
    ("spans/aggregate", {}, {"metric": P50, "order_by": [{"field": "span_name"}]}),
]


async def test_refused_input_is_a_400(client: httpx.AsyncClient) -> None:
    for path, params, body in REFUSED:
        response = await client.post(f"{OBS}/{path}", params=params, json=body)
        assert response.status_code == 400, (path, params, body, response.text)
        assert set(response.json()["detail"]) == {"message", "error_code"}

    median = {"metric": {"measure": "duration_ns", "aggregation": "median"}}
    for path, params, body in [
        ("spans/aggregate", {}, median),
        ("spans/search", {"page_size": 2**70}, {}),
    ]:
        response = await client.post(f"{OBS}/{path}", params=params, json=body)
        assert response.status_code == 422, (path, response.text)
        assert response.json()["detail"]["error_code"] == "VALIDATION_ERROR"


async def test_sqlite_refuses_a_percentile_over_too_many_values(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite computes percentiles in Python: past MAX_PERCENTILE_ROWS values, a 400."""
    monkeypatch.setattr(aggregate_repository, "MAX_PERCENTILE_ROWS", 2)
    await insert(app, *(span(tenant, 1, n, BASE + n, n) for n in range(1, 4)))
    body: dict[str, Any] = {"metric": P50}
    refused = await client.post(f"{OBS}/spans/aggregate", json=body)
    assert refused.status_code == 400
    assert "narrow" in refused.json()["detail"]["message"]
    body["search_expression"] = "duration_ns > 1"
    narrowed = await client.post(f"{OBS}/spans/aggregate", json=body)
    assert narrowed.json()["data"][0]["metric_value"] == 2.5
