"""Aggregations of spans and traces on both databases: where their SQL differs (percentiles, by
percentile_cont on Postgres and in Python on SQLite; time buckets, calendar months; map keys as
dimensions; nulls in the order)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from tests.observability.traces.seed import BASE, HOUR, MINUTE, insert, span, trace
from tests.support.app_fixtures import TenantKey

pytestmark = pytest.mark.both_databases("maestrale.observability.traces.aggregate_repository")

OBS = "/v1/observability"
FEBRUARY = BASE + 32 * 24 * HOUR
TWO_HOURS = {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T02:00:00Z"}


async def aggregate(
    client: httpx.AsyncClient, what: str, body: dict[str, Any], **params: str
) -> dict[str, Any]:
    response = await client.post(f"{OBS}/{what}/aggregate", json=body, params=params)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def values(result: dict[str, Any], key: str = "metric_value") -> list[Any]:
    return [row[key] for row in result["data"]]


async def test_span_aggregations(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant, other: TenantKey
) -> None:
    await insert(
        app,
        *(
            span(tenant, 1, n, BASE + n * MINUTE, 10 * n, attributes={"x": "p"})
            for n in range(1, 5)
        ),
        span(tenant, 2, 5, BASE + HOUR + MINUTE, 100, service_name="b", attributes={"x": "q"}),
        span(tenant, 2, 6, BASE + HOUR + MINUTE, 200, service_name="b", attributes={"x": "q"}),
        span(tenant, 3, 7, FEBRUARY, 1000),
        span(other.tenant, 4, 8, BASE, 5),
        trace(tenant, 1, BASE, status_code="Error"),
        trace(tenant, 2, BASE + HOUR),
        trace(tenant, 3, FEBRUARY),
    )
    by_service = await aggregate(
        client,
        "spans",
        {"metric": {"measure": "span_id", "aggregation": "count"}, "dimensions": ["service_name"]},
    )
    assert [(r["dimensions"], r["metric_value"]) for r in by_service["data"]] == [
        ({"service_name": "svc"}, 5),
        ({"service_name": "b"}, 2),
    ]
    assert by_service["data"][0]["metric_name"] == "count(span_id)"

    for aggregation, expected in (("p50", [25, 150]), ("p90", [37, 190])):
        hourly = await aggregate(
            client,
            "spans",
            {
                "metric": {"measure": "duration_ns", "aggregation": aggregation},
                "time_dimension": {"granularity": "hour"},
            },
            **TWO_HOURS,
        )
        assert values(hourly) == pytest.approx(expected)
        assert values(hourly, "time_bucket") == [
            "2026-01-01T00:00:00.000000Z",
            "2026-01-01T01:00:00.000000Z",
        ]
        assert hourly["meta"]["granularity_seconds"] == 3600

    by_key: dict[str, Any] = {
        "metric": {"measure": "duration_ns", "aggregation": "sum"},
        "dimensions": ["span_attributes['x']"],
    }
    summed = await aggregate(client, "spans", by_key)
    assert [
        (r["dimensions"]["span_attributes['x']"], r["metric_value"]) for r in summed["data"]
    ] == [
        (None, 1000),
        ("q", 300),
        ("p", 100),
    ]
    ordered = await aggregate(
        client, "spans", {**by_key, "order_by": [{"field": "span_attributes['x']"}]}
    )
    assert [r["dimensions"]["span_attributes['x']"] for r in ordered["data"]] == ["p", "q", None]

    monthly = await aggregate(
        client,
        "spans",
        {
            "metric": {"measure": "*", "aggregation": "count"},
            "time_dimension": {"granularity": "month"},
        },
    )
    assert values(monthly, "time_bucket") == [
        "2026-01-01T00:00:00.000000Z",
        "2026-02-01T00:00:00.000000Z",
    ]
    assert values(monthly) == [6, 1]
    assert monthly["meta"]["granularity_seconds"] is None
    weekly = await aggregate(
        client,
        "spans",
        {
            "metric": {"measure": "*", "aggregation": "count"},
            "time_dimension": {"granularity": "week"},
            "limit": 1,
        },
    )
    assert values(weekly, "time_bucket") == ["2025-12-29T00:00:00.000000Z"]  # a Monday

    for aggregation, scalar in (("avg", 200.0), ("min", 10), ("max", 1000)):
        body: dict[str, Any] = {"metric": {"measure": "duration_ns", "aggregation": aggregation}}
        assert values(await aggregate(client, "spans", body)) == [scalar]
    distinct = {"metric": {"measure": "service_name", "aggregation": "count_distinct"}}
    assert values(await aggregate(client, "spans", distinct)) == [2]

    auto = await aggregate(
        client,
        "traces",
        {
            "metric": {"measure": "trace_id", "aggregation": "count"},
            "dimensions": ["status_code"],
            "time_dimension": {"granularity": "auto"},
        },
        **TWO_HOURS,
    )
    assert auto["meta"]["granularity_seconds"] == 60
    assert auto["meta"]["from_timestamp"] == "2026-01-01T00:00:00.000000Z"
    assert [(r["dimensions"]["status_code"], r["metric_value"]) for r in auto["data"]] == [
        ("Error", 1),
        ("Unset", 1),
    ]
