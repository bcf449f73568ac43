"""/v1/admin/rate-limit, /v1/admin/spend-limit and /v1/admin/usage."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.app import create_app
from maestrale.core.auth.tables import Organization
from maestrale.core.clock import utcnow
from maestrale.limits.policy import month_start
from tests.admin.conftest import admin_client, default_workspace_id, foreign_admin_key
from tests.support.app_fixtures import make_client
from tests.support.app_fixtures import test_settings as make_settings

pytestmark = pytest.mark.both_databases(
    "maestrale.admin.billing.repository", "maestrale.admin.base_repository"
)

PRICED = """
[[models]]
id = "priced-echo"
aliases = ["priced"]
engine = "builtin"
capabilities = ["completion_chat"]
price = { input_per_million = 1000.0, output_per_million = 3000.0 }
"""


@pytest.fixture
async def billed_app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    models = tmp_path / "models.toml"
    models.write_text(PRICED)
    settings = make_settings(
        database_url,
        tmp_path / "data",
        models=models,
        limits={
            "requests_per_second": 50,
            "models": {"priced-echo": {"tokens_per_minute": 100000, "tokens_per_month": 10**9}},
        },
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def test_rate_limits_read_back_the_configuration(billed_app: FastAPI) -> None:
    async with admin_client(billed_app) as admin:
        resp = await admin.get("/v1/admin/rate-limit")
    assert resp.status_code == 200
    assert resp.json() == {
        "requests_per_second": 50,
        "tokens_limits_by_model": {
            "priced-echo": {"tokens_per_minute": 100000, "tokens_per_month": 10**9}
        },
    }


async def test_unlimited_by_default(admin: httpx.AsyncClient) -> None:
    resp = await admin.get("/v1/admin/rate-limit")
    assert resp.json() == {"requests_per_second": None, "tokens_limits_by_model": {}}
    spend = (await admin.get("/v1/admin/spend-limit")).json()["limits"]
    assert spend["completion"]["no_monthly_limit"] is True
    assert spend["completion"]["usage_limit"] is None
    assert spend["completion"]["monthly_limit_reached"] is False
    assert spend["completion"]["assistant_usage"] == spend["completion"]["vibe_usage"] == 0


async def test_spend_limit_set_and_read(billed_app: FastAPI) -> None:
    async with admin_client(billed_app) as admin, make_client(billed_app) as client:
        resp = await admin.post("/v1/admin/spend-limit", json={"amount": 500})
        assert resp.status_code == 200
        limits = resp.json()["limits"]
        assert limits["currency"] == "USD"
        assert limits["last_payment_failure"] is False
        assert limits["last_payment_failure_protection"] is None
        completion = limits["completion"]
        assert completion["usage_limit"] == 500 and completion["usage_limit_organization"] == 500
        assert completion["no_monthly_limit"] is False
        assert completion["monthly_limit_reached"] is False
        assert completion["usage"] == 0
        body = {"model": "priced", "messages": [{"role": "user", "content": "a b c"}]}
        assert (await client.post("/v1/chat/completions", json=body)).status_code == 200
        await billed_app.state.services.recorder.flush()
        read = (await admin.get("/v1/admin/spend-limit")).json()["limits"]["completion"]
        # 4 prompt tokens at 1000/M, 4 completion tokens ("echo: a b c") at 3000/M
        assert read["usage"] == pytest.approx(0.016)
        assert read["total_usage"] == read["usage"]
        removed = await admin.post("/v1/admin/spend-limit", json={"no_monthly_limit": True})
        assert removed.json()["limits"]["completion"]["no_monthly_limit"] is True
        assert removed.json()["limits"]["completion"]["usage_limit"] is None
        for bad in ({}, {"amount": -1}, {"amount": "lots"}, {"amount": None}):
            assert (await admin.post("/v1/admin/spend-limit", json=bad)).status_code == 422, bad


async def test_spend_limit_is_per_organization(app: FastAPI, admin: httpx.AsyncClient) -> None:
    await admin.post("/v1/admin/spend-limit", json={"amount": 10})
    key, _, _ = await foreign_admin_key(app)
    async with admin_client(app, key) as foreign:
        theirs = (await foreign.get("/v1/admin/spend-limit")).json()["limits"]["completion"]
    assert theirs["usage_limit"] is None


async def test_usage_by_category_and_model_with_navigation(billed_app: FastAPI) -> None:
    async with admin_client(billed_app) as admin, make_client(billed_app) as client:
        ws = await default_workspace_id(admin)
        body = {"model": "priced", "messages": [{"role": "user", "content": "one two"}]}
        for _ in range(2):
            assert (await client.post("/v1/chat/completions", json=body)).status_code == 200
        await billed_app.state.services.recorder.flush()
        usage = (await admin.get("/v1/admin/usage")).json()
        entry = usage["completion"]["models"]["priced"]
        assert [e["value"] for e in entry["input"]] == [6]  # 2 calls x 3 prompt tokens
        assert [e["value"] for e in entry["output"]] == [6]  # "echo: one two"
        assert entry["requests"][0]["value"] == 2 and entry["input"][0]["workspace_id"] == ws
        cost = entry["input"][0]["cost"] + entry["output"][0]["cost"]
        assert cost == pytest.approx((6 * 1000 + 6 * 3000) / 1e6)
        assert entry["input"][0]["cost"] == pytest.approx(6 * 1000 / 1e6)
        for category in ("chat", "ocr", "audio", "audio_characters", "connectors"):
            assert usage[category] == {"models": {}}
        assert set(usage["libraries_api"]) == {"audio_seconds", "pages", "tokens"}
        assert usage["fine_tuning"] == {"storage": {}, "training": {}}
        now = utcnow()
        start = month_start(now)
        assert usage["start_date"] == start.isoformat().replace("+00:00", "Z")
        assert usage["date"] == usage["start_date"] and usage["end_date"] > usage["start_date"]
        assert usage["next_month"] is None  # the current month has no next one yet
        assert usage["previous_month"] is None  # the organization was created this month
        assert usage["currency"] == "USD" and usage["currency_symbol"] == "$"
        # The spec's name, and the one the public admin docs use.
        assert usage["assistant_usage"] == 0 and usage["vibe_usage"] == 0
        prices = {(p["billing_metric"], p["billing_group"]): p["price"] for p in usage["prices"]}
        assert prices[("priced-echo", "output")] == pytest.approx(3000 / 1e6)
        # Another month: navigation both ways, and nothing of this month.
        last_year = now.year - 1
        resp = await admin.get("/v1/admin/usage", params={"month": "05", "year": last_year})
        assert resp.status_code == 200
        old = resp.json()
        assert old["completion"] == {"models": {}}
        assert old["start_date"].startswith(f"{last_year}-05-01")
        assert old["next_month"] == f"{last_year}-06"
        filtered = await admin.get("/v1/admin/usage", params={"workspace_id": "nope"})
        assert filtered.status_code == 404
        for bad in ({"month": 13}, {"month": "may"}, {"year": 1999}):
            assert (await admin.get("/v1/admin/usage", params=bad)).status_code == 422, bad


async def test_usage_previous_month_reaches_back_to_the_organization(
    billed_app: FastAPI,
) -> None:
    async with admin_client(billed_app) as admin:
        async with billed_app.state.services.db.transaction() as work:
            org = (await work.session.execute(select(Organization))).scalars().first()
            assert org is not None
            org.created_at = datetime(2024, 1, 15, tzinfo=UTC)
        march = (await admin.get("/v1/admin/usage", params={"month": 3, "year": 2024})).json()
        assert march["previous_month"] == "2024-02" and march["next_month"] == "2024-04"
        january = (await admin.get("/v1/admin/usage", params={"month": 1, "year": 2024})).json()
        assert january["previous_month"] is None
        december = (await admin.get("/v1/admin/usage", params={"month": 12, "year": 2024})).json()
        assert december["next_month"] == "2025-01"
        assert december["end_date"].startswith("2024-12-31T23:59:59")
