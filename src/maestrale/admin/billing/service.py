"""Rate limits, the monthly spend limit and the month's usage of an organization.

Usage and spend are read from what the gateway recorded (`usage_records`: tokens, and cost at
the catalog's price when the call was made). Setting a limit drops it from every replica's cache
at once (with Redis) or within `limits_cache_ttl`.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from maestrale.admin.billing.repository import BillingRepository, UsageTotal
from maestrale.admin.billing.schemas import (
    FineTuningUsage,
    LibrariesUsage,
    LimitsContext,
    ModelUsage,
    PriceData,
    RateLimitsOut,
    SpendLimitIn,
    SpendLimitOut,
    TokenLimitsByModel,
    UsageLimits,
    UsageOut,
)
from maestrale.admin.context import AdminContext
from maestrale.admin.workspaces.repository import WorkspaceAdminRepository
from maestrale.config.limits import LimitsConfig
from maestrale.core.auth.invalidation import Invalidation
from maestrale.core.clock import iso, utcnow
from maestrale.core.errors import NotFound
from maestrale.engines.registry import EngineRegistry
from maestrale.limits.policy import EffectiveLimits, combine, month_start, next_month
from maestrale.limits.repository import LimitsRepository

SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}
# Endpoint of a usage record → usage category of the report.
CATEGORIES = {
    "chat": "completion",
    "fim": "completion",
    "embeddings": "completion",
    "agents": "completion",
    "ocr": "ocr",
    "transcription": "audio",
    "audio": "audio",
    "speech": "audio_characters",
}
# Endpoint of the usage records of library documents' processing (libraries_api).
LIBRARIES = "libraries"


def _month(year: int | None, month: int | None) -> datetime:
    now = utcnow()
    return datetime(year or now.year, month or now.month, 1, tzinfo=UTC)


def _split_cost(
    cost: float, prompt: int, completion: int, registry: EngineRegistry, model: str
) -> tuple[float, float]:
    """Split a recorded cost between input and output in the ratio of the catalog's prices."""
    resolved = registry.resolve(model)
    if resolved is None or cost == 0:
        return (
            (cost, 0.0) if completion == 0 else (0.0, cost) if prompt == 0 else (cost / 2, cost / 2)
        )
    price = resolved.spec.price
    weight_in = prompt * price.input_per_million
    weight_out = completion * price.output_per_million
    if weight_in + weight_out == 0:
        return 0.0, 0.0
    share = weight_in / (weight_in + weight_out)
    return cost * share, cost * (1 - share)


def _libraries_usage(
    categories: dict[str, dict[str, dict[str, list[dict[str, Any]]]]], row: UsageTotal
) -> None:
    """Documents processed by libraries: the pages read, and the tokens embedded (with their
    cost) and the documents, by embeddings model."""
    base = {"workspace_id": row.workspace_id, "endpoint": row.endpoint}
    pages = categories["libraries_pages"].setdefault(row.model, {"input": []})
    pages["input"].append({**base, "value": row.pages, "value_paid": row.pages, "cost": 0.0})
    tokens = categories["libraries_tokens"].setdefault(row.model, {"input": [], "requests": []})
    value, cost = row.prompt_tokens, round(row.cost, 9)
    tokens["input"].append({**base, "value": value, "value_paid": value, "cost": cost})
    tokens["requests"].append({**base, "value": row.calls})


def _empty() -> ModelUsage:
    return ModelUsage(models={})


def _prices(registry: EngineRegistry) -> list[PriceData]:
    prices = []
    for spec in registry.specs:
        for group, per_million in (
            ("input", spec.price.input_per_million),
            ("output", spec.price.output_per_million),
        ):
            if per_million:
                prices.append(
                    PriceData(
                        api_zone="global",
                        billing_group=group,
                        billing_metric=spec.id,
                        event_type="api_tokens",
                        price=per_million / 1_000_000,
                    )
                )
    return prices


class BillingService:
    def __init__(self, ctx: AdminContext, config: LimitsConfig, registry: EngineRegistry) -> None:
        self.ctx = ctx
        self.config = config
        self.registry = registry
        self.repo = BillingRepository(ctx.session, ctx.organization_id)
        self.limits = LimitsRepository(ctx.session, ctx.organization_id)
        self.workspaces = WorkspaceAdminRepository(ctx.session, ctx.organization_id)

    async def effective_limits(self) -> EffectiveLimits:
        """The configured limits with the organization's overrides."""
        return combine(
            self.config, await self.limits.overrides(), await self.limits.model_overrides()
        )

    async def rate_limits(self) -> RateLimitsOut:
        limits = await self.effective_limits()
        return RateLimitsOut(
            requests_per_second=limits.requests_per_second,
            tokens_limits_by_model={
                name: TokenLimitsByModel(
                    tokens_per_minute=value.tokens_per_minute,
                    tokens_per_month=value.tokens_per_month,
                )
                for name, value in sorted(limits.models.items())
            },
        )

    async def spend_limit(self) -> SpendLimitOut:
        limits = await self.effective_limits()
        used = round(await self.limits.cost_since(month_start(utcnow())), 6)
        limit = limits.monthly_spend_limit
        return SpendLimitOut(
            limits=LimitsContext(
                completion=UsageLimits(
                    monthly_limit_reached=limit is not None and used >= limit,
                    no_monthly_limit=limit is None,
                    total_usage=used,
                    usage=used,
                    usage_limit=limit,
                    usage_limit_organization=limit,
                    assistant_usage=0.0,  # no coding assistant here
                    vibe_usage=0.0,
                ),
                currency=limits.currency,
                last_payment_failure=False,
                last_payment_failure_protection=None,
            )
        )

    async def set_spend_limit(self, body: SpendLimitIn) -> SpendLimitOut:
        """Set the monthly spend limit; every replica drops its cached limits once the change
        has committed."""
        before = (await self.effective_limits()).monthly_spend_limit
        row = await self.limits.upsert()
        if body.no_monthly_limit:
            row.no_monthly_limit, row.monthly_spend_limit = True, None
        else:
            row.no_monthly_limit, row.monthly_spend_limit = False, body.amount
        await self.repo.flush()
        self.ctx.audit(
            "limits.spend",
            "organization",
            self.ctx.organization_id,
            before={"monthly_spend_limit": before},
            after={
                "monthly_spend_limit": row.monthly_spend_limit,
                "no_monthly_limit": row.no_monthly_limit,
            },
        )
        self.ctx.invalidate(Invalidation("limits", self.ctx.organization_id))
        return await self.spend_limit()

    async def usage(
        self, year: int | None, month: int | None, workspace_id: str | None
    ) -> UsageOut:
        """A month's usage and cost per category and model, with the months to navigate to."""
        start = _month(year, month)
        end = next_month(start)
        if workspace_id is not None and await self.workspaces.workspace(workspace_id) is None:
            raise NotFound(f"workspace {workspace_id!r} not found", code="workspace_not_found")
        categories: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = defaultdict(dict)
        for row in await self.repo.usage_totals(start, end, workspace_id):
            if row.endpoint == LIBRARIES:
                _libraries_usage(categories, row)
                continue
            prompt, completion = row.prompt_tokens, row.completion_tokens
            cost_in, cost_out = _split_cost(row.cost, prompt, completion, self.registry, row.model)
            entry = categories[CATEGORIES.get(row.endpoint, "completion")].setdefault(
                row.model, {"input": [], "output": [], "requests": []}
            )
            base = {"workspace_id": row.workspace_id, "endpoint": row.endpoint}
            entry["input"].append(
                {**base, "value": prompt, "value_paid": prompt, "cost": round(cost_in, 9)}
            )
            entry["output"].append(
                {**base, "value": completion, "value_paid": completion, "cost": round(cost_out, 9)}
            )
            entry["requests"].append({**base, "value": row.calls})
        created_at = await self.repo.organization_created_at()
        first = month_start(created_at) if created_at is not None else start
        this_month = month_start(utcnow())
        currency = self.config.currency

        def usage_of(name: str) -> ModelUsage:
            return ModelUsage(models=categories.get(name, {}))

        return UsageOut(
            audio=usage_of("audio"),
            audio_characters=usage_of("audio_characters"),
            chat=usage_of("chat"),
            completion=usage_of("completion"),
            connectors=usage_of("connectors"),
            currency=currency,
            currency_symbol=SYMBOLS.get(currency),
            date=iso(start) or "",
            start_date=iso(start) or "",
            end_date=iso(end - timedelta(microseconds=1)) or "",
            fine_tuning=FineTuningUsage(storage={}, training={}),
            libraries_api=LibrariesUsage(
                audio_seconds=_empty(),
                pages=usage_of("libraries_pages"),
                tokens=usage_of("libraries_tokens"),
            ),
            next_month=None if start >= this_month else end.strftime("%Y-%m"),
            ocr=usage_of("ocr"),
            previous_month=(
                None if start <= first else (start - timedelta(days=1)).strftime("%Y-%m")
            ),
            prices=_prices(self.registry),
            assistant_usage=0.0,  # no coding assistant here
            vibe_usage=0.0,
        )
