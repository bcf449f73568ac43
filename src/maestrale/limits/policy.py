"""The limits in force for an organization: configured defaults overlaid with its overrides,
kept in memory for `ttl` seconds and dropped at once when changed (see invalidation)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from maestrale.config.limits import LimitsConfig, ModelTokenLimits
from maestrale.core.auth.invalidation import Invalidation
from maestrale.core.db import Database
from maestrale.core.refresh_cache import RefreshingCache
from maestrale.limits.repository import LimitsRepository
from maestrale.limits.tables import ModelTokenLimit, OrganizationLimits


@dataclass(frozen=True, slots=True)
class EffectiveLimits:
    requests_per_second: int | None = None
    monthly_spend_limit: float | None = None
    models: Mapping[str, ModelTokenLimits] = field(default_factory=dict)
    currency: str = "USD"

    @property
    def unlimited(self) -> bool:
        return (
            self.requests_per_second is None
            and self.monthly_spend_limit is None
            and not self.models
        )

    def for_model(self, names: tuple[str, ...]) -> ModelTokenLimits | None:
        for name in names:
            found = self.models.get(name)
            if found is not None:
                return found
        return None


def _field(override: int | None, default: int | None) -> int | None:
    """NULL: the default; 0: explicitly unlimited."""
    if override is None:
        return default
    return override or None


def combine(
    config: LimitsConfig,
    overrides: OrganizationLimits | None,
    model_rows: list[ModelTokenLimit],
) -> EffectiveLimits:
    rps = config.requests_per_second
    spend = config.monthly_spend_limit
    if overrides is not None:
        rps = _field(overrides.requests_per_second, rps)
        if overrides.no_monthly_limit:
            spend = None
        elif overrides.monthly_spend_limit is not None:
            spend = overrides.monthly_spend_limit
    models = dict(config.models)
    for row in model_rows:
        base = models.get(row.model, ModelTokenLimits())
        models[row.model] = ModelTokenLimits(
            tokens_per_minute=_field(row.tokens_per_minute, base.tokens_per_minute),
            tokens_per_month=_field(row.tokens_per_month, base.tokens_per_month),
        )
    models = {
        name: value
        for name, value in models.items()
        if value.tokens_per_minute is not None or value.tokens_per_month is not None
    }
    return EffectiveLimits(rps, spend, models, config.currency)


async def load_limits(db: Database, config: LimitsConfig, organization_id: str) -> EffectiveLimits:
    async with db.transaction() as work:
        repo = LimitsRepository(work.session, organization_id)
        return combine(config, await repo.overrides(), await repo.model_overrides())


class LimitsProvider:
    """An organization's limits, read again in the background before they go stale
    (`RefreshingCache`): no database read on the request path while they are in use, and one
    read per organization however many requests miss at once."""

    def __init__(self, db: Database, config: LimitsConfig, ttl: float) -> None:
        self.db = db
        self.config = config
        self._cache: RefreshingCache[str, EffectiveLimits] = RefreshingCache(ttl)

    async def get(self, organization_id: str) -> EffectiveLimits:
        limits = await self._cache.get(organization_id, self._load)
        assert limits is not None  # _load never answers None
        return limits

    async def _load(self, organization_id: str) -> EffectiveLimits:
        return await load_limits(self.db, self.config, organization_id)

    def on_invalidation(self, item: Invalidation) -> None:
        if item.kind == "all" or (item.kind == "limits" and item.id is None):
            self._cache.clear()
        elif item.kind == "limits" and item.id:
            self._cache.pop(item.id)


def month_start(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_month(start: datetime) -> datetime:
    return (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
