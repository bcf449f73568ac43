"""Wire models of admin rate limits, spend limits and usage."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, Field, model_validator


class TokenLimitsByModel(BaseModel):
    tokens_per_minute: int | None
    tokens_per_month: int | None


class RateLimitsOut(BaseModel):
    requests_per_second: int | None = Field(description="per workspace; null: unlimited")
    tokens_limits_by_model: dict[str, TokenLimitsByModel]


class SpendLimitIn(BaseModel):
    amount: float | None = Field(
        default=None, ge=0, description="monthly limit, in the billing currency (500 is 500)"
    )
    no_monthly_limit: bool = False

    @model_validator(mode="after")
    def _amount_or_none(self) -> Self:
        if self.amount is None and not self.no_monthly_limit:
            raise ValueError("`amount` is required unless `no_monthly_limit` is true")
        return self


class UsageLimits(BaseModel):
    monthly_limit_reached: bool
    no_monthly_limit: bool
    total_usage: float | None
    usage: float | None
    usage_limit: float | None
    usage_limit_organization: float | None
    assistant_usage: float | None = Field(description="usage of the coding assistant")
    vibe_usage: float | None = Field(description="`assistant_usage` under the platform's name")


class LimitsContext(BaseModel):
    completion: UsageLimits
    currency: str
    last_payment_failure: bool
    last_payment_failure_protection: bool | None


class SpendLimitOut(BaseModel):
    limits: LimitsContext


class ModelUsage(BaseModel):
    models: dict[str, dict[str, list[dict[str, Any]]]]


class LibrariesUsage(BaseModel):
    audio_seconds: ModelUsage
    pages: ModelUsage
    tokens: ModelUsage


class FineTuningUsage(BaseModel):
    storage: dict[str, int]
    training: dict[str, dict[str, list[dict[str, Any]]]]


class PriceData(BaseModel):
    api_zone: str
    billing_group: str
    billing_metric: str
    event_type: str
    price: float


class UsageOut(BaseModel):
    audio: ModelUsage
    audio_characters: ModelUsage
    chat: ModelUsage
    completion: ModelUsage
    connectors: ModelUsage
    currency: str | None
    currency_symbol: str | None
    date: str
    end_date: str
    fine_tuning: FineTuningUsage
    libraries_api: LibrariesUsage
    next_month: str | None
    ocr: ModelUsage
    previous_month: str | None
    prices: list[PriceData] | None
    start_date: str
    assistant_usage: float = Field(description="usage amount of the coding assistant")
    vibe_usage: float = Field(description="`assistant_usage` under the platform's name")
