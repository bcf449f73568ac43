"""The configured default limits (`[limits]` in the TOML settings file, or `MAESTRALE_LIMITS` as
JSON). Runtime overrides per organization (admin API, `maestrale limits`) take precedence."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ModelTokenLimits(BaseModel):
    """Token limits of one model, per workspace; unset: unlimited."""

    model_config = ConfigDict(extra="forbid")

    tokens_per_minute: int | None = Field(
        default=None, ge=1, description="tokens per minute of a workspace on this model"
    )
    tokens_per_month: int | None = Field(
        default=None, ge=1, description="tokens per calendar month (UTC) of a workspace on it"
    )


class LimitsConfig(BaseModel):
    """Defaults for every organization. `None` means unlimited.

    ```toml
    [limits]
    requests_per_second = 20          # per workspace
    monthly_spend_limit = 100.0       # per organization, in `currency`
    [limits.models."mistral-small-latest"]
    tokens_per_minute = 500000        # per workspace and model
    tokens_per_month = 1000000000
    ```
    """

    model_config = ConfigDict(extra="forbid")

    requests_per_second: int | None = Field(
        default=None, ge=1, description="requests per second of a workspace; unset: unlimited"
    )
    monthly_spend_limit: float | None = Field(
        default=None,
        ge=0,
        description="spend of an organization per calendar month (UTC), at the catalog's"
        " prices, in `currency`; unset: unlimited",
    )
    models: dict[str, ModelTokenLimits] = Field(
        default_factory=dict,
        description="token limits per model id (its aliases share them), each a table below",
    )
    currency: str = Field(
        default="USD", min_length=3, max_length=3, description="ISO 4217 code of the spend limit"
    )
