"""Bad input is a clear 4xx with a JSON body, never a 500: integers past 64 bits in any URL,
pages past the largest offset, search values no column can compare with, signed links and
Range headers with absurd numbers, multipart boundaries of any length."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.files.support import jsonl, upload
from tests.support.app_fixtures import ADMIN_KEY

pytestmark = pytest.mark.both_databases()

ZERO_ID = "00000000-0000-0000-0000-000000000000"
HUGE: list[int | str] = [2**63, 2**64, -(2**64), "1" * 5000]


def assert_clear_4xx(resp: httpx.Response, what: str) -> None:
    assert 400 <= resp.status_code < 500, (what, resp.status_code, resp.text[:300])
    assert resp.headers["content-type"].startswith("application/json"), what
    assert resp.json(), what


def integer_query_parameters(app: FastAPI) -> list[tuple[str, str, str]]:
    """(method, path, name) of every integer query parameter in the OpenAPI document."""
    found = []
    for path, operations in app.openapi()["paths"].items():
        for method, operation in operations.items():
            for param in operation.get("parameters", []):
                if param["in"] == "query" and "integer" in str(param.get("schema")):
                    found.append(
                        (method.upper(), path.replace("{", "").replace("}", ""), param["name"])
                    )
    return found


async def test_every_integer_query_parameter_refuses_values_past_64_bits(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    parameters = integer_query_parameters(app)
    paged = {path for _, path, name in parameters if name == "page"}
    assert {"/v1/agents", "/v1/files", "/v1/batch/jobs", "/v1/conversations"} <= paged
    assert {"/v1/admin/users", "/v1/observability/datasets"} <= paged
    for method, path, name in parameters:
        headers = {"x-api-key": ADMIN_KEY} if path.startswith("/v1/admin/") else {}
        body: dict[str, Any] | None = {} if method in ("POST", "PUT", "PATCH") else None
        for value in HUGE:
            resp = await client.request(
                method, path, params={name: value}, headers=headers, json=body
            )
            if resp.status_code == 404 and "_id" in path:
                continue  # a path of a resource that does not exist: the 404 comes first
            assert_clear_4xx(resp, f"{method} {path} {name}={str(value)[:20]}")


async def test_pages_past_the_largest_offset(app: FastAPI, client: httpx.AsyncClient) -> None:
    for method, path, name in integer_query_parameters(app):
        if name != "page" or "_id" in path:
            continue
        headers = {"x-api-key": ADMIN_KEY} if path.startswith("/v1/admin/") else {}
        body: dict[str, Any] | None = {} if method in ("POST", "PUT", "PATCH") else None
        params = {"page": 2**62, "page_size": 1000}
        resp = await client.request(method, path, params=params, headers=headers, json=body)
        assert_clear_4xx(resp, f"{method} {path} page=2**62")
    resp = await client.get("/v1/agents", params={"page": 2**63 - 1, "page_size": 2})
    assert_clear_4xx(resp, "agents past the last offset")
    resp = await client.get("/v1/agents", params={"page": 2**40, "page_size": 1000})
    assert resp.status_code == 200 and resp.json() == []


SEARCH = "/v1/observability/chat-completion-events/search"


@pytest.mark.parametrize(
    ("field", "op", "value"),
    [
        ("nb_input_tokens", "gt", 1e30),
        ("nb_input_tokens", "includes", [1e30]),
        ("status_code", "eq", 1e300),
        ("request_messages", "len_eq", 2**63),
        ("created_at", "lt", "9999-12-31T23:59:59-05:00"),
        ("created_at", "gt", "0001-01-01T00:00:00+05:00"),
        ("extra_fields.score", "gt", 10**30),
    ],
)
async def test_search_values_no_column_can_compare_with(
    app: FastAPI, client: httpx.AsyncClient, field: str, op: str, value: Any
) -> None:
    await client.post(
        "/v1/chat/completions",
        json={"model": "maestrale-echo", "messages": [{"role": "user", "content": "hi"}]},
    )
    await app.state.services.recorder.flush()
    condition = {"field": field, "op": op, "value": value}
    resp = await client.post(SEARCH, json={"search_params": {"filters": condition}})
    assert_clear_4xx(resp, f"{field} {op} {value}")
    assert set(resp.json()["detail"]) == {"message", "error_code"}


async def test_signed_links_with_absurd_values(
    client: httpx.AsyncClient, anon_client: httpx.AsyncClient
) -> None:
    file_id = (await upload(client, jsonl("{}"), purpose="batch")).json()["id"]
    url = f"/v1/files/{file_id}/content"
    for params in (
        {"expires": "9" * 5000, "signature": "x"},
        {"expires": "1" + "0" * 30, "signature": "x"},
        {"expires": "4102444800", "signature": "é"},
        {"expires": "4102444800", "signature": "\u2603" * 40},
    ):
        resp = await anon_client.get(url, params=params)
        assert resp.status_code == 403, (params, resp.text)
        assert resp.json()["code"] == "invalid_signature"


async def test_range_headers_with_absurd_numbers(client: httpx.AsyncClient) -> None:
    content = jsonl("{}", "{}")
    file_id = (await upload(client, content, purpose="batch")).json()["id"]
    url = f"/v1/files/{file_id}/content"
    huge = "9" * 5000
    whole = await client.get(url, headers={"Range": f"bytes=0-{huge}"})
    assert whole.status_code == 206 and whole.content == content
    suffix = await client.get(url, headers={"Range": f"bytes=-{huge}"})
    assert suffix.status_code == 206 and suffix.content == content
    beyond = await client.get(url, headers={"Range": f"bytes={huge}-"})
    assert beyond.status_code == 416 and beyond.json()["code"] == "range_not_satisfiable"
    padded = await client.get(url, headers={"Range": f"bytes={'0' * 5000}1-2"})
    assert padded.status_code == 206 and padded.content == content[1:3]


async def test_a_multipart_boundary_of_any_length(client: httpx.AsyncClient) -> None:
    for boundary in ("b" * 5000, "b" * 257, "b" * 256):
        body = (
            f"--{boundary}\r\n"
            'Content-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
            f"--{boundary}\r\n"
            'Content-Disposition: form-data; name="file"; filename="a.jsonl"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n{}\n\r\n"
            f"--{boundary}--\r\n"
        ).encode()
        headers = {"content-type": f"multipart/form-data; boundary={boundary}"}
        resp = await client.post("/v1/files", content=body, headers=headers)
        if len(boundary) > 256:  # RFC 2046 says 70: longer ones are taken up to 256
            assert_clear_4xx(resp, f"boundary of {len(boundary)}")
            assert resp.json()["code"] == "invalid_multipart"
        else:
            assert resp.status_code == 200, resp.text
