"""/v1/admin/rate-limit, /v1/admin/spend-limit and /v1/admin/usage."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from maestrale.admin.billing.schemas import RateLimitsOut, SpendLimitIn, SpendLimitOut, UsageOut
from maestrale.admin.billing.service import BillingService
from maestrale.admin.context import Admin
from maestrale.config.dependencies import AppSettings
from maestrale.core.routing import domain_router
from maestrale.engines.dependencies import Engines

router = domain_router()


async def billing_service(ctx: Admin, settings: AppSettings, engines: Engines) -> BillingService:
    return BillingService(ctx, settings.limits, engines)


Billing = Annotated[BillingService, Depends(billing_service)]


@router.get("/rate-limit", response_model=RateLimitsOut)
async def get_rate_limits(billing: Billing) -> RateLimitsOut:
    """The limits in force: requests per second (per workspace) and tokens per minute and per
    month (per workspace and model). `null` means unlimited."""
    return await billing.rate_limits()


@router.get("/spend-limit", response_model=SpendLimitOut)
async def get_spend_limits(billing: Billing) -> SpendLimitOut:
    """The organization's monthly spend limit and this month's spend."""
    return await billing.spend_limit()


@router.post("/spend-limit", response_model=SpendLimitOut)
async def update_spend_limits(body: SpendLimitIn, billing: Billing) -> SpendLimitOut:
    """Set the organization's monthly spend limit (`no_monthly_limit: true` removes it)."""
    return await billing.set_spend_limit(body)


@router.get("/usage", response_model=UsageOut)
async def get_usage(
    billing: Billing,
    month: Annotated[int | None, Query(ge=1, le=12)] = None,
    year: Annotated[int | None, Query(ge=2000, le=9999)] = None,
    workspace_id: Annotated[str | None, Query(max_length=36)] = None,
) -> UsageOut:
    """A month's usage and cost per category and model (the current month by default), with
    `previous_month` / `next_month` (YYYY-MM) to navigate."""
    return await billing.usage(year, month, workspace_id)
