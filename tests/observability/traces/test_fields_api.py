"""The fields of traces, spans and logs and their options: through mistralai 3.7.0 (the answers
parse into GetTraceFields, GetTraceFieldOptions…), then the edges over plain HTTP."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from tests.observability.traces.seed import BASE, MINUTE, NS, insert, log, span, trace
from tests.support.app_fixtures import TenantKey
from tests.support.live_sdk import sdk3_on_socket

pytestmark = pytest.mark.both_databases("maestrale.observability.traces.fields_repository")


async def _seed(app: FastAPI, tenant: Tenant, other: Tenant) -> None:
    await insert(
        app,
        trace(tenant, 1, BASE, status_code="Error"),
        trace(tenant, 2, BASE + MINUTE),
        span(tenant, 1, 1, BASE, NS, service_name="api", attributes={"k": "a"}),
        span(tenant, 2, 2, BASE + MINUTE, NS, service_name="worker", attributes={"k": 7}),
        span(other, 3, 3, BASE + 2 * MINUTE, NS, service_name="secret"),
        log(tenant, BASE, "hello", severity_text="INFO"),
        log(tenant, BASE + MINUTE, "oops", severity_text="ERROR"),
    )


async def test_the_sdk_lists_fields_and_options(
    app: FastAPI, tenant: Tenant, other: TenantKey
) -> None:
    await _seed(app, tenant, other.tenant)
    async with sdk3_on_socket(app) as ok:
        obs = "beta.observability"
        fields = (await ok(f"{obs}.traces.get_trace_fields"))["field_definitions"]
        by_name = {f["name"]: f for f in fields}
        assert by_name["duration_ns"]["type"] == "INT"
        assert "p95" in by_name["duration_ns"]["supported_aggregations"]
        assert by_name["models_used"]["type"] == "ARRAY"
        spans = (await ok(f"{obs}.spans.list_span_fields"))["field_definitions"]
        model = next(f for f in spans if f["name"] == "request_model")
        assert model["source_attribute_key"] == "gen_ai.request.model"
        logs = (await ok(f"{obs}.logs.list"))["field_definitions"]
        assert {"body", "log_attributes", "timestamp"} <= {f["name"] for f in logs}

        status = await ok(f"{obs}.traces.fetch_options", field_name="status_code")
        assert status["options"] == ["Unset", "Error"]  # the most recent first
        services = await ok(f"{obs}.spans.fetch_span_field_options", field_name="service_name")
        assert services["options"] == ["worker", "api"]  # not another workspace's
        later = await ok(
            f"{obs}.spans.fetch_span_field_options",
            field_name="service_name",
            **{"from_": "2026-01-01T00:00:30Z"},
        )
        assert later["options"] == ["worker"]
        severity = await ok(f"{obs}.logs.fetch_options", field_name="severity_text")
        assert severity["options"] == ["ERROR", "INFO"]


async def test_options_of_keys_numbers_and_unknown_fields(
    client: httpx.AsyncClient, app: FastAPI, tenant: Tenant, other: TenantKey
) -> None:
    await _seed(app, tenant, other.tenant)
    base = "/v1/observability/spans/fields"
    keys = await client.get(f"{base}/span_attributes['k']/options")
    assert keys.status_code == 200 and keys.json() == {"options": ["7", "a"]}
    numbers = await client.get(f"{base}/duration_ns/options")
    assert numbers.status_code == 200 and numbers.json() == {"options": None}
    unknown = await client.get(f"{base}/nope/options")
    assert unknown.status_code == 404
    assert unknown.json()["detail"]["error_code"] == "FIELDS_NOT_FOUND"
    backwards = await client.get(
        f"{base}/service_name/options?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z"
    )
    assert backwards.status_code == 400
