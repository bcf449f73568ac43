"""The observability group declares its real 4xx body in /openapi.json (issue 14, item 16):
`{"detail": {"message", "error_code"}}`, the reference's ObservabilityErrorData, not FastAPI's
HTTPValidationError."""

from __future__ import annotations

from typing import Any

import httpx

from tests.observability.events_seed import obs_error


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
