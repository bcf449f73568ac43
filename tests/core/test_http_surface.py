"""The service surface: health, OpenAPI, metrics, request ids, and JSON errors for every kind of
malformed request (never a 500)."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI


async def test_health_needs_no_key(anon_client: httpx.AsyncClient) -> None:
    resp = await anon_client.get("/health")
    assert resp.status_code == 200
    assert resp.json()["status"] == "ok"


async def test_openapi_and_docs(anon_client: httpx.AsyncClient) -> None:
    spec = (await anon_client.get("/openapi.json")).json()
    assert "/v1/models" in spec["paths"]
    assert "/v1/fine_tuning/models/{model_id}/archive" in spec["paths"]
    assert (await anon_client.get("/docs")).status_code == 200


async def test_openapi_declares_what_every_route_can_answer(anon_client: httpx.AsyncClient) -> None:
    """The statuses every route of its shape can answer are declared (issue 14, the schema
    fuzzer): 400 and 401 everywhere under /v1, 404 with path parameters, 413 with a body; event
    streams next to JSON; the upload's multipart form."""
    spec = (await anon_client.get("/openapi.json")).json()
    for path, operations in spec["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, operation in operations.items():
            declared = set(operation["responses"])
            assert {"400", "401"} <= declared, (method, path)
            if "{" in path:
                assert "404" in declared, (method, path)
            if method != "get":
                assert "413" in declared, (method, path)
    for path in ("/v1/chat/completions", "/v1/conversations", "/v1/audio/transcriptions"):
        content = spec["paths"][path]["post"]["responses"]["200"]["content"]
        assert set(content) == {"application/json", "text/event-stream"}, path
    upload = spec["paths"]["/v1/files"]["post"]["requestBody"]["content"]
    assert upload["multipart/form-data"]["schema"]["required"] == ["file"]


async def test_every_response_has_a_request_id(client: httpx.AsyncClient) -> None:
    ok = await client.get("/v1/models")
    missing = await client.get("/v1/nope")
    assert ok.headers["x-request-id"] != missing.headers["x-request-id"]
    echoed = await client.get("/v1/models", headers={"x-request-id": "abc-123"})
    assert echoed.headers["x-request-id"] == "abc-123"
    hostile = await client.get("/v1/models", headers={"x-request-id": "a b\tc" * 100})
    assert hostile.headers["x-request-id"] != "a b\tc" * 100


async def test_metrics_count_routes_and_statuses(client: httpx.AsyncClient) -> None:
    await client.get("/v1/models")
    await client.get("/v1/models/nope")
    text = (await client.get("/metrics")).text
    assert 'maestrale_http_requests_total{method="GET",route="/v1/models",status="200"}' in text
    assert 'route="/v1/models/{model_id:path}",status="404"' in text
    assert "maestrale_http_request_duration_seconds_bucket" in text


async def test_unknown_route_and_method(client: httpx.AsyncClient) -> None:
    resp = await client.get("/v1/does/not/exist")
    assert resp.status_code == 404
    assert resp.json()["code"] == "route_not_found"
    resp = await client.put("/v1/models")
    assert resp.status_code == 405
    assert resp.json()["object"] == "error"
    # mistralai 3.x's operations not served: a 501 naming them, not a 405 or a 404; the routes
    # served under the same prefix answer as ever.
    for method, path in (
        ("POST", "/v1/workflows/deployments"),
        ("POST", "/v1/workflows/deployments/d/start"),
    ):
        resp = await client.request(method, path, json={})
        assert resp.status_code == 501, path
        assert resp.json()["code"] == "not_implemented" and "workflow" in resp.json()["message"]
    served = await client.get("/v1/workflows/deployments/d")
    assert served.status_code == 404 and served.json()["code"] == "WF_1100"


MALFORMED = [
    ("PATCH", "/v1/fine_tuning/models/x", {"content": b"{not json"}),
    ("PATCH", "/v1/fine_tuning/models/x", {"content": b"\xff\xfe\x00"}),
    (
        "PATCH",
        "/v1/fine_tuning/models/x",
        {"content": b"[]", "headers": {"content-type": "application/json"}},
    ),
    (
        "PATCH",
        "/v1/fine_tuning/models/x",
        {"content": b"null", "headers": {"content-type": "application/json"}},
    ),
    ("PATCH", "/v1/fine_tuning/models/x", {"json": {"name": {"a": 1}}}),
    ("PATCH", "/v1/fine_tuning/models/x", {"json": {"name": "x" * 5000}}),
    (
        "PATCH",
        "/v1/fine_tuning/models/x",
        {"content": b"name=x", "headers": {"content-type": "application/x-www-form-urlencoded"}},
    ),
    (
        "PATCH",
        "/v1/fine_tuning/models/x",
        {"content": b'{"name": "\\ud800"}', "headers": {"content-type": "application/json"}},
    ),
    ("GET", "/v1/models?provider=" + "x" * 300, {}),
    ("GET", "/v1/models/%00%ff", {}),
    ("GET", "/v1/models/" + "a" * 5000, {}),
    ("POST", "/v1/models", {"json": {}}),
    ("DELETE", "/v1/fine_tuning/models/%2e%2e/archive", {}),
    ("GET", "/v1/models", {"headers": {"authorization": b"Bearer \xc3\xa9\xff"}}),
    ("GET", "/v1/models?model=a%00b", {}),
]


@pytest.mark.parametrize(("method", "path", "kwargs"), MALFORMED)
async def test_malformed_requests_get_a_json_4xx(
    client: httpx.AsyncClient, method: str, path: str, kwargs: dict[str, object]
) -> None:
    resp = await client.request(method, path, **kwargs)  # type: ignore[arg-type]
    assert 400 <= resp.status_code < 500, resp.text
    body = resp.json()
    assert "detail" in body or body["object"] == "error"


async def test_oversized_body_is_413(app: FastAPI, client: httpx.AsyncClient) -> None:
    resp = await client.patch(
        "/v1/fine_tuning/models/x",
        content=b"{}",
        headers={"content-length": str(app.state.settings.max_request_bytes + 1)},
    )
    assert resp.status_code == 413
    assert resp.json()["code"] == "payload_too_large"
