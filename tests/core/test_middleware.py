"""The request middleware on its own: JSON 500 with the request id, and log lines that carry it."""

from __future__ import annotations

import json
import logging

import pytest
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient

from maestrale.core.errors import install_error_handlers
from maestrale.core.logs import JsonFormatter, RequestIdFilter
from maestrale.core.metrics import Metrics
from maestrale.core.middleware import RequestContextMiddleware


def _app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/boom")
    async def boom() -> None:
        logging.getLogger("maestrale.test").info("about to fail", extra={"detail_field": 7})
        raise RuntimeError("secret internals")

    app.add_middleware(RequestContextMiddleware, metrics=Metrics(), max_request_bytes=1024)
    return app


async def test_unhandled_error_is_json_500_with_request_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    formatter = JsonFormatter()
    caplog.handler.addFilter(RequestIdFilter())
    async with AsyncClient(transport=ASGITransport(app=_app()), base_url="http://t") as c:
        with caplog.at_level(logging.INFO):
            resp = await c.get("/boom", headers={"x-request-id": "req-42"})
    assert resp.status_code == 500
    assert resp.json()["code"] == "internal_error"
    assert "secret internals" not in resp.text
    assert resp.headers["x-request-id"] == "req-42"
    records = [json.loads(formatter.format(r)) for r in caplog.records]
    mine = [r for r in records if r.get("request_id") == "req-42"]
    assert {r["logger"] for r in mine} >= {"maestrale.test", "maestrale.errors", "maestrale.access"}
    assert next(r for r in mine if r["logger"] == "maestrale.test")["detail_field"] == 7
    assert next(r for r in mine if r["logger"] == "maestrale.access")["status"] == 500
