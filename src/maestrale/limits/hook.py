"""The gateway hook that enforces limits before every model call.

Per workspace: requests per second (a sliding one-second log) and, per model, tokens per minute
and per month. Per organization: the monthly spend, from the catalog's prices. Each call reserves
its worst case (`CallInfo.max_tokens_estimate` tokens, priced at the model's dearer rate) before
the engine runs and is settled with its real usage afterwards, so a burst cannot overshoot a
limit by more than the calls already in flight. An organization without limits costs one dict
lookup.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from maestrale.core.db import Database
from maestrale.core.errors import ServiceUnavailable, TooManyRequests, retry_after
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import Usage
from maestrale.gateway.hooks import CallInfo
from maestrale.limits.counters import CounterBackend, CounterCheck, Decision, RateCheck
from maestrale.limits.policy import EffectiveLimits, LimitsProvider, month_start, next_month
from maestrale.limits.repository import LimitsRepository, workspace_tokens_since

log = logging.getLogger("maestrale.limits")

MINUTE_TTL = 180
MONTH_TTL = 40 * 86400


@dataclass(frozen=True, slots=True)
class _Seed:
    kind: str  # tokens | cost
    scope: str  # workspace id | organization id
    models: tuple[str, ...]
    since: datetime


@dataclass(frozen=True, slots=True)
class Reservation:
    id: str
    keys: tuple[tuple[str, str], ...]  # (counter key, "tokens" | "cost")


class LimitExceeded(TooManyRequests):
    code = "rate_limit_exceeded"


class SpendLimitExceeded(TooManyRequests):
    code = "spend_limit_exceeded"
    type = "billing_error"


def model_names(spec: ModelSpec) -> tuple[str, ...]:
    return (spec.id, *spec.aliases)


def worst_case_cost(spec: ModelSpec, tokens: int) -> float:
    price = spec.price
    return tokens * max(price.input_per_million, price.output_per_million) / 1_000_000


class LimitsHook:
    def __init__(
        self,
        provider: LimitsProvider,
        backend: CounterBackend,
        db: Database,
        *,
        fail_open: bool = False,
    ) -> None:
        self.provider = provider
        self.backend = backend
        self.db = db
        self.fail_open = fail_open

    async def before_call(self, call: CallInfo) -> Reservation | None:
        limits = await self.provider.get(call.caller.organization_id)
        if limits.unlimited:
            return None
        now = time.time()
        rate, checks, seeds_needed = self._checks(call, limits, now)
        if rate is None and not checks:
            return None
        reservation = Reservation(
            uuid.uuid4().hex,
            tuple((c.key, "cost" if c.name == "monthly_spend" else "tokens") for c in checks),
        )
        try:
            decision = await self._admit(reservation.id, rate, checks, seeds_needed)
        except (TooManyRequests, ServiceUnavailable):
            raise
        except Exception as exc:
            if self.fail_open:
                log.warning("limits store unavailable, admitting the call: %s", exc)
                return None
            log.error("limits store unavailable: %s", exc)
            raise ServiceUnavailable(
                "rate and spend limits cannot be checked right now; retry shortly",
                code="limits_unavailable",
                headers={"Retry-After": "1"},
            ) from exc
        if not decision.allowed:
            raise self._refusal(decision, rate, checks, limits, call, now)
        return reservation

    async def after_call(
        self, call: CallInfo, reservation: object | None, usage: Usage, cost: float
    ) -> None:
        if not isinstance(reservation, Reservation):
            return
        used = [
            (key, cost if kind == "cost" else float(usage.total_tokens))
            for key, kind in reservation.keys
        ]
        try:
            await self.backend.settle(reservation.id, used)
        except Exception:
            # The reservation expires on its own; the usage is recorded by accounting anyway.
            log.exception("could not settle a limits reservation")

    def _checks(
        self, call: CallInfo, limits: EffectiveLimits, now: float
    ) -> tuple[RateCheck | None, list[CounterCheck], dict[str, _Seed]]:
        caller = call.caller
        ws = caller.workspace_id
        rate = None
        if limits.requests_per_second:
            rate = RateCheck(f"mstl:rps:{ws}", limits.requests_per_second)
        estimate = max(int(call.max_tokens_estimate), 1)
        checks: list[CounterCheck] = []
        seeds: dict[str, _Seed] = {}
        moment = datetime.fromtimestamp(now, UTC)
        start = month_start(moment)
        month_end = next_month(start).timestamp()
        month = start.strftime("%Y-%m")
        names = model_names(call.spec)
        model_limits = limits.for_model(names)
        if model_limits is not None and model_limits.tokens_per_minute:
            minute = int(now // 60)
            checks.append(
                CounterCheck(
                    f"mstl:tpm:{ws}:{call.spec.id}:{minute}",
                    estimate,
                    model_limits.tokens_per_minute,
                    MINUTE_TTL,
                    (minute + 1) * 60,
                    "tokens_per_minute",
                )
            )
        if model_limits is not None and model_limits.tokens_per_month:
            key = f"mstl:tpmo:{ws}:{call.spec.id}:{month}"
            checks.append(
                CounterCheck(
                    key,
                    estimate,
                    model_limits.tokens_per_month,
                    MONTH_TTL,
                    month_end,
                    "tokens_per_month",
                    seedable=True,
                )
            )
            seeds[key] = _Seed("tokens", ws, names, start)
        worst = worst_case_cost(call.spec, estimate)
        if limits.monthly_spend_limit is not None and worst > 0:
            key = f"mstl:spend:{caller.organization_id}:{month}"
            checks.append(
                CounterCheck(
                    key,
                    worst,
                    limits.monthly_spend_limit,
                    MONTH_TTL,
                    month_end,
                    "monthly_spend",
                    seedable=True,
                )
            )
            seeds[key] = _Seed("cost", caller.organization_id, (), start)
        return rate, checks, seeds

    async def _admit(
        self,
        reservation_id: str,
        rate: RateCheck | None,
        checks: Sequence[CounterCheck],
        seeds_needed: dict[str, _Seed],
    ) -> Decision:
        seeds: dict[str, float] = {}
        for _ in range(len(checks) + 1):
            decision = await self.backend.admit(reservation_id, rate, checks, seeds)
            if not decision.missing:
                return decision
            for index in decision.missing:
                key = checks[index].key
                seeds[key] = await self._seed(seeds_needed[key])
        return decision

    async def _seed(self, seed: _Seed) -> float:
        """What a month counter starts from: the usage already recorded this month."""
        async with self.db.transaction() as work:
            if seed.kind == "cost":
                return await LimitsRepository(work.session, seed.scope).cost_since(seed.since)
            return float(
                await workspace_tokens_since(work.session, seed.scope, seed.models, seed.since)
            )

    def _refusal(
        self,
        decision: Decision,
        rate: RateCheck | None,
        checks: Sequence[CounterCheck],
        limits: EffectiveLimits,
        call: CallInfo,
        now: float,
    ) -> TooManyRequests:
        if decision.refused_rate and rate is not None:
            retry = decision.retry_after
            message = f"rate limit exceeded: {rate.limit} requests per second for this workspace"
            return LimitExceeded(message, headers=retry_after(retry))
        check = checks[decision.refused_counter or 0]
        retry = max(check.window_end - now, 0.0)
        if check.name == "monthly_spend":
            return SpendLimitExceeded(
                f"monthly spend limit of {check.limit:.2f} {limits.currency} reached for this "
                "organization; paid calls are refused until next month or until the limit is "
                "raised (POST /v1/admin/spend-limit)",
                headers=retry_after(retry),
            )
        per = "minute" if check.name == "tokens_per_minute" else "month"
        return LimitExceeded(
            f"token limit exceeded for model {call.spec.id!r}: {int(check.limit)} tokens per "
            f"{per} for this workspace (this request may use up to {int(check.amount)})",
            code="token_limit_exceeded",
            headers=retry_after(retry),
        )
