"""The admin boundary: only an admin key in x-api-key opens /v1/admin."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from tests.support.app_fixtures import ADMIN_KEY, API_KEY


def _client(app: FastAPI, headers: dict[str, str]) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test", headers=headers
    )


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": f"Bearer {API_KEY}"},  # a standard key, whatever its user's role
        {"x-api-key": API_KEY},
        {"Authorization": f"Bearer {ADMIN_KEY}"},  # admin keys go in x-api-key
        {"x-api-key": "wrong"},
    ],
)
async def test_admin_routes_refuse_everything_but_an_admin_key(
    app: FastAPI, headers: dict[str, str]
) -> None:
    async with _client(app, headers) as c:
        for method in ("GET", "POST", "DELETE"):
            resp = await c.request(method, "/v1/admin/api-keys")
            assert resp.status_code == 401, (headers, method)
            assert resp.json()["type"] == "authentication_error"


async def test_admin_key_passes_the_boundary(app: FastAPI) -> None:
    async with _client(app, {"x-api-key": ADMIN_KEY}) as c:
        resp = await c.get("/v1/admin/nothing-here")
    assert resp.status_code == 404
    assert resp.json()["code"] == "route_not_found"
