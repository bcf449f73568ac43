"""/v1/admin/rate-limit, /v1/admin/spend-limit and /v1/admin/usage."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request

from maestrale.admin import billing_service as service
from maestrale.admin.billing_schemas import RateLimitsOut, SpendLimitIn, SpendLimitOut, UsageOut
from maestrale.admin.context import Admin
from maestrale.core.routing import domain_router
from maestrale.engines.registry import EngineRegistry
from maestrale.limits.settings import LimitsConfig

router = domain_router()


async def limits_config(request: Request) -> LimitsConfig:
    config: LimitsConfig = request.app.state.settings.limits
    return config


async def engine_registry(request: Request) -> EngineRegistry:
    registry: EngineRegistry = request.app.state.engines
    return registry


Config = Annotated[LimitsConfig, Depends(limits_config)]
Registry = Annotated[EngineRegistry, Depends(engine_registry)]


@router.get("/rate-limit", response_model=RateLimitsOut)
async def get_rate_limits(ctx: Admin, config: Config) -> RateLimitsOut:
    """The limits in force: requests per second (per workspace) and tokens per minute and per
    month (per workspace and model). `null` means unlimited."""
    return await service.rate_limits(ctx, config)


@router.get("/spend-limit", response_model=SpendLimitOut)
async def get_spend_limits(ctx: Admin, config: Config) -> SpendLimitOut:
    """The organization's monthly spend limit and this month's spend."""
    return await service.spend_limit(ctx, config)


@router.post("/spend-limit", response_model=SpendLimitOut)
async def update_spend_limits(body: SpendLimitIn, ctx: Admin, config: Config) -> SpendLimitOut:
    """Set the organization's monthly spend limit (`no_monthly_limit: true` removes it)."""
    result = await service.set_spend_limit(ctx, config, body)
    await ctx.commit()
    return result


@router.get("/usage", response_model=UsageOut)
async def get_usage(
    ctx: Admin,
    config: Config,
    registry: Registry,
    month: Annotated[int | None, Query(ge=1, le=12)] = None,
    year: Annotated[int | None, Query(ge=2000, le=9999)] = None,
    workspace_id: Annotated[str | None, Query(max_length=36)] = None,
) -> UsageOut:
    """A month's usage and cost per category and model (the current month by default), with
    `previous_month` / `next_month` (YYYY-MM) to navigate."""
    return await service.usage(ctx, registry, config, year, month, workspace_id)
