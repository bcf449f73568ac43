"""Limits enforced by the gateway hook, through the API: requests per second, tokens per minute
and per month, monthly spend; reservations reconciled with real usage."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import insert

from maestrale.accounting.tables import UsageRecord
from maestrale.app import create_app
from maestrale.core.clock import utcnow
from maestrale.core.errors import ServiceUnavailable
from maestrale.engines.specs import ModelSpec, Price
from maestrale.gateway.hooks import Caller, CallInfo
from maestrale.limits.hook import LimitsHook
from maestrale.limits.policy import EffectiveLimits
from tests.admin.conftest import admin_client
from tests.limits.conftest import redis_url
from tests.support.app_fixtures import default_tenant, make_client
from tests.support.app_fixtures import test_settings as make_settings

pytestmark = pytest.mark.both_databases("maestrale.limits.repository")

MODELS = """
[[models]]
id = "priced-echo"
aliases = ["priced"]
engine = "builtin"
capabilities = ["completion_chat", "completion_fim"]
price = { input_per_million = 10000.0, output_per_million = 10000.0 }
"""

AppFactory = Callable[..., Any]


@pytest.fixture(params=["memory", "redis"])
def limited_app(request: pytest.FixtureRequest, database_url: str, tmp_path: Path) -> AppFactory:
    """Build an app with the given `limits` configuration (and a priced model), counting in
    process or in Redis."""
    redis = None
    if request.param == "redis":
        redis = redis_url()
        if not redis:
            pytest.skip("MAESTRALE_TEST_REDIS_URL is not set")

    @asynccontextmanager
    async def build(**limits: Any) -> AsyncIterator[FastAPI]:
        models = tmp_path / "models.toml"
        models.write_text(MODELS)
        settings = make_settings(
            database_url, tmp_path / "data", models=models, limits=limits, redis_url=redis
        )
        application = create_app(settings)
        async with application.router.lifespan_context(application):
            yield application

    return build


def chat(model: str = "maestrale-echo", text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}], **extra}


async def test_requests_per_second(limited_app: AppFactory) -> None:
    async with limited_app(requests_per_second=3) as app, make_client(app) as client:
        statuses = [(await client.post("/v1/chat/completions", json=chat())) for _ in range(5)]
        assert [r.status_code for r in statuses] == [200, 200, 200, 429, 429]
        refused = statuses[3]
        assert refused.json()["code"] == "rate_limit_exceeded"
        assert refused.json()["type"] == "rate_limit_error"
        assert "3 requests per second" in refused.json()["message"]
        assert refused.headers["retry-after"] == "1"
        await asyncio.sleep(1.05)
        assert (await client.post("/v1/chat/completions", json=chat())).status_code == 200
        # Other endpoints through the gateway count too.
        fim = await client.post("/v1/fim/completions", json={"model": "echo", "prompt": "x"})
        assert fim.status_code == 200


async def test_requests_per_second_are_per_workspace(
    limited_app: AppFactory,
) -> None:
    async with limited_app(requests_per_second=1) as app, make_client(app) as client:
        from tests.support.app_fixtures import create_tenant

        other = await create_tenant(app.state.services.db)
        async with make_client(app, other.key) as neighbour:
            assert (await client.post("/v1/chat/completions", json=chat())).status_code == 200
            assert (await client.post("/v1/chat/completions", json=chat())).status_code == 429
            assert (await neighbour.post("/v1/chat/completions", json=chat())).status_code == 200


async def test_tokens_per_minute_reserve_the_worst_case_then_reconcile(
    limited_app: AppFactory,
) -> None:
    limits = {"models": {"maestrale-echo": {"tokens_per_minute": 100}}}
    async with limited_app(**limits) as app, make_client(app) as client:
        # worst case ~90 tokens (max_tokens 90 + the prompt); really used: a handful
        big = chat(max_tokens=90)
        assert (await client.post("/v1/chat/completions", json=big)).status_code == 200
        # admitted only because the first call was settled with its real usage
        assert (await client.post("/v1/chat/completions", json=big)).status_code == 200
        too_big = await client.post("/v1/chat/completions", json=chat(max_tokens=200))
        assert too_big.status_code == 429
        body = too_big.json()
        assert body["code"] == "token_limit_exceeded"
        assert "100 tokens per minute" in body["message"]
        assert 1 <= int(too_big.headers["retry-after"]) <= 60
        # aliases share the model's counter
        assert (
            await client.post("/v1/chat/completions", json=chat("echo", max_tokens=200))
        ).status_code == 429
        # a model without token limits is not affected
        other = await client.post("/v1/chat/completions", json=chat("priced", max_tokens=200))
        assert other.status_code == 200


async def test_tokens_per_month_start_from_recorded_usage(limited_app: AppFactory) -> None:
    limits = {"models": {"maestrale-echo": {"tokens_per_month": 1000}}}
    async with limited_app(**limits) as app, make_client(app) as client:
        tenant = await default_tenant(app.state.services.db)
        async with app.state.services.db.transaction() as work:
            await work.session.execute(
                insert(UsageRecord),
                [
                    {
                        "organization_id": tenant.organization_id,
                        "workspace_id": tenant.workspace_id,
                        "model": "echo",  # an alias: the same model
                        "endpoint": "chat",
                        "total_tokens": 995,
                        "created_at": utcnow(),
                    }
                ],
            )
        refused = await client.post("/v1/chat/completions", json=chat(max_tokens=10))
        assert refused.status_code == 429 and "per month" in refused.json()["message"]
        assert (
            await client.post("/v1/chat/completions", json=chat(max_tokens=2))
        ).status_code == 200


async def test_spend_limit(limited_app: AppFactory) -> None:
    async with limited_app() as app, make_client(app) as client, admin_client(app) as admin:
        # 10000 per million tokens: a call with max_tokens 8 and "hi" reserves ~8 tokens (0.08)
        # and really costs 2 prompt + 2 completion ("echo: hi") tokens = 0.04.
        assert (await admin.post("/v1/admin/spend-limit", json={"amount": 0.3})).status_code == 200
        admitted = 0
        for _ in range(10):
            resp = await client.post("/v1/chat/completions", json=chat("priced", max_tokens=8))
            if resp.status_code != 200:
                break
            admitted += 1
        assert resp.status_code == 429
        body = resp.json()
        assert body["code"] == "spend_limit_exceeded" and body["type"] == "billing_error"
        assert "monthly spend limit of 0.30 USD" in body["message"]
        assert int(resp.headers["retry-after"]) >= 1
        await app.state.services.recorder.flush()
        spend = (await admin.get("/v1/admin/spend-limit")).json()["limits"]["completion"]
        assert spend["usage"] <= 0.3 and spend["usage"] > 0.3 - 0.08  # within one call
        assert admitted == 6  # 6 x 0.04 = 0.24; a 7th could reach 0.32
        # Free models stay available; raising the limit takes effect at once.
        assert (await client.post("/v1/chat/completions", json=chat())).status_code == 200
        await admin.post("/v1/admin/spend-limit", json={"amount": 1})
        assert (
            await client.post("/v1/chat/completions", json=chat("priced", max_tokens=8))
        ).status_code == 200
        await admin.post("/v1/admin/spend-limit", json={"no_monthly_limit": True})
        assert (await client.post("/v1/chat/completions", json=chat("priced"))).status_code == 200


async def test_spend_limit_reached_is_reported(limited_app: AppFactory) -> None:
    async with (
        limited_app(monthly_spend_limit=0.04) as app,
        make_client(app) as client,
        admin_client(app) as admin,
    ):
        body = chat("priced", max_tokens=3)
        assert (await client.post("/v1/chat/completions", json=body)).status_code == 200
        await app.state.services.recorder.flush()
        spend = (await admin.get("/v1/admin/spend-limit")).json()["limits"]["completion"]
        assert spend["usage_limit"] == 0.04 and spend["monthly_limit_reached"] is True


async def test_a_burst_cannot_overshoot(limited_app: AppFactory) -> None:
    """Concurrent calls reserve their worst case before the engine runs: with room for 3
    reservations, exactly 3 of 10 simultaneous (slow) calls are admitted."""
    async with limited_app(monthly_spend_limit=0.35) as app, make_client(app) as client:
        body = chat("priced", text="/sleep 300\nx", max_tokens=8)  # reserves 0.1 (10 tokens)
        responses = await asyncio.gather(
            *(client.post("/v1/chat/completions", json=body) for _ in range(10))
        )
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [200] * 3 + [429] * 7


async def test_limits_store_down_fails_closed() -> None:
    class Broken:
        async def admit(self, *args: Any) -> Any:
            raise ConnectionError("redis is down")

        async def settle(self, *args: Any) -> None:
            raise ConnectionError("redis is down")

        async def aclose(self) -> None:
            return None

    class Fixed:
        async def get(self, organization_id: str) -> EffectiveLimits:
            return EffectiveLimits(requests_per_second=5)

    spec = ModelSpec(id="m", engine="builtin", price=Price())
    call = CallInfo(Caller("org", "ws"), spec, "chat", 10)
    closed = LimitsHook(Fixed(), Broken(), db=None, fail_open=False)  # type: ignore[arg-type]
    with pytest.raises(ServiceUnavailable) as refused:
        await closed.before_call(call)
    assert refused.value.code == "limits_unavailable"
    opened = LimitsHook(Fixed(), Broken(), db=None, fail_open=True)  # type: ignore[arg-type]
    assert await opened.before_call(call) is None


async def test_no_limits_no_counting(limited_app: AppFactory) -> None:
    async with limited_app() as app, make_client(app) as client:
        responses = await asyncio.gather(
            *(client.post("/v1/chat/completions", json=chat()) for _ in range(20))
        )
        assert all(r.status_code == 200 for r in responses)
        assert (
            app.state.services.limits.provider._cache
        )  # the organization's limits were looked up once
