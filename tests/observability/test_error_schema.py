"""The observability group declares its real 4xx body in /openapi.json (issue 14, item 16):
`{"detail": {"message", "error_code"}}`, the reference's ObservabilityErrorData, not FastAPI's
HTTPValidationError."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.observability.events_seed import obs_error

pytestmark = pytest.mark.both_databases()


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


async def test_observability_4xx_bodies_are_declared_as_observability_error_data(
    anon_client: httpx.AsyncClient,
) -> None:
    spec = (await anon_client.get("/openapi.json")).json()
    operations = [
        (path, method, op)
        for path, ops in spec["paths"].items()
        if path.startswith("/v1/observability/")
        for method, op in ops.items()
    ]
    assert len(operations) > 20
    for path, method, op in operations:
        for status in ("400", "404", "422"):
            assert status in op["responses"], (method, path, status)
            content = op["responses"][status]["content"]["application/json"]
            assert content["schema"] == {"$ref": "#/components/schemas/ObservabilityErrorData"}, (
                method,
                path,
                status,
            )
    data = _resolve(spec, {"$ref": "#/components/schemas/ObservabilityErrorData"})
    assert data["required"] == ["detail"]
    detail = _resolve(spec, data["properties"]["detail"])
    assert set(detail["required"]) == {"message", "error_code"}
    assert set(detail["properties"]) == {"message", "error_code"}
    # Other groups keep FastAPI's validation error.
    chat = spec["paths"]["/v1/chat/completions"]["post"]["responses"]["422"]
    assert chat["content"]["application/json"]["schema"]["$ref"].endswith("HTTPValidationError")


async def test_the_declared_body_is_what_a_422_sends(client: httpx.AsyncClient) -> None:
    resp = await client.post("/v1/observability/chat-completion-events/search", json={})
    obs_error(resp, 422, "VALIDATION_ERROR")


async def test_a_nul_in_the_url_gets_the_group_body(client: httpx.AsyncClient) -> None:
    """Refused before any route (issue 14, found by the schema fuzzer): the 400 of a URL with a
    NUL was the common error body under /v1/observability/ too."""
    resp = await client.get("/v1/observability/judges?q=a%00b")
    assert "NUL" in obs_error(resp, 400, "VALIDATION_ERROR")
    resp = await client.get("/v1/observability/datasets/a%00b")
    obs_error(resp, 400, "VALIDATION_ERROR")
    # Elsewhere the common body stays.
    resp = await client.get("/v1/models?q=a%00b")
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_url"


async def test_a_value_postgres_refuses_gets_the_group_body(
    client: httpx.AsyncClient, backend: str
) -> None:
    """Found by the schema fuzzer on Postgres (issue 14): a value the database refuses (NUL in
    text, SQLSTATE 22) was answered 400 in the common error body under /v1/observability/."""
    if backend != "postgres":
        pytest.skip("SQLite stores NUL in text")
    resp = await client.post(
        "/v1/observability/datasets", json={"name": "nul\u0000name", "description": ""}
    )
    assert "stored" in obs_error(resp, 400, "VALIDATION_ERROR")
