"""`maestrale limits show | set | set-model | unset-model`: an organization's limits from the
command line. Values: a number, `default` (back to the configured default) or `unlimited`.
Changes are audited and, with Redis, reach every replica at once (else within
`limits_cache_ttl`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.admin.audit import AuditLog
from maestrale.config import Settings
from maestrale.core.auth.invalidation import Invalidation
from maestrale.core.auth.repository import TenancyRepository
from maestrale.core.db import Database
from maestrale.limits.policy import EffectiveLimits, combine
from maestrale.limits.repository import LimitsRepository

DEFAULT, UNLIMITED = "default", "unlimited"


def _limit(cast: Callable[[str], float | int]) -> Callable[[str], float | int | str]:
    def parse(text: str) -> float | int | str:
        if text.lower() in (DEFAULT, UNLIMITED, "none"):
            return UNLIMITED if text.lower() == "none" else text.lower()
        try:
            value = cast(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(
                f"not a number, `default` or `unlimited`: {text}"
            ) from exc
        if value < 0 or (cast is int and value == 0):
            raise argparse.ArgumentTypeError("must be positive (use `unlimited` for no limit)")
        return value

    return parse


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    common: Callable[[argparse.ArgumentParser], None],
) -> None:
    limits = sub.add_parser("limits", help="show or set an organization's rate and spend limits")
    limits_sub = limits.add_subparsers(dest="limits_command", required=True)
    show = limits_sub.add_parser("show", help="print the limits in force")
    set_ = limits_sub.add_parser("set", help="requests per second and monthly spend")
    set_.add_argument("--rps", type=_limit(int), help="requests per second, per workspace")
    set_.add_argument("--spend", type=_limit(float), help="monthly spend limit (billing currency)")
    model = limits_sub.add_parser("set-model", help="token limits of one model")
    model.add_argument("model", help="model id of the catalog")
    model.add_argument("--tpm", type=_limit(int), help="tokens per minute, per workspace")
    model.add_argument(
        "--tokens-per-month", type=_limit(int), help="tokens per month, per workspace"
    )
    unset = limits_sub.add_parser("unset-model", help="back to the configured token limits")
    unset.add_argument("model", help="model id of the catalog")
    for parser in (show, set_, model, unset):
        common(parser)
        parser.add_argument("--organization", help="organization id (default: the default one)")


def _db_value(value: float | int | str) -> int | None:
    """Column value: None keeps the default, 0 means explicitly unlimited."""
    if value == DEFAULT:
        return None
    if value == UNLIMITED:
        return 0
    return int(value)


def _as_json(limits: EffectiveLimits, organization_id: str) -> bytes:
    return orjson.dumps(
        {
            "organization_id": organization_id,
            "requests_per_second": limits.requests_per_second,
            "monthly_spend_limit": limits.monthly_spend_limit,
            "currency": limits.currency,
            "models": {k: v.model_dump() for k, v in sorted(limits.models.items())},
        },
        option=orjson.OPT_INDENT_2,
    )


async def _organization(session: AsyncSession, given: str | None) -> str | None:
    if given:
        found = await TenancyRepository(session).organization(given)
        return given if found is not None else None
    ws = await TenancyRepository(session).default_workspace()
    return None if ws is None else ws.organization_id


async def run(settings: Settings, args: argparse.Namespace) -> int:
    db = Database(settings.resolved_database_url)
    try:
        async with db.transaction() as work:
            org_id = await _organization(work.session, args.organization)
            if org_id is None:
                sys.stderr.write(
                    "organization not found (start the server once to create the default one)\n"
                )
                return 1
            repo = LimitsRepository(work.session, org_id)
            before = combine(settings.limits, await repo.overrides(), await repo.model_overrides())
            if args.limits_command == "show":
                sys.stdout.write(_as_json(before, org_id).decode() + "\n")
                return 0
            if args.limits_command == "set":
                row = await repo.upsert()
                if args.rps is not None:
                    row.requests_per_second = _db_value(args.rps)
                if args.spend is not None:
                    row.no_monthly_limit = args.spend == UNLIMITED
                    row.monthly_spend_limit = (
                        None if args.spend in (DEFAULT, UNLIMITED) else float(args.spend)
                    )
            elif args.limits_command == "set-model":
                model_row = await repo.upsert_model(args.model)
                if args.tpm is not None:
                    model_row.tokens_per_minute = _db_value(args.tpm)
                if args.tokens_per_month is not None:
                    model_row.tokens_per_month = _db_value(args.tokens_per_month)
            elif not await repo.delete_model(args.model):
                sys.stderr.write(f"no override for model {args.model!r}\n")
                return 1
            await work.session.flush()
            after = combine(settings.limits, await repo.overrides(), await repo.model_overrides())
            AuditLog(work.session).record(
                organization_id=org_id,
                actor="cli",
                action=f"limits.{args.limits_command}",
                target_type="organization",
                target_id=org_id,
                before=orjson.loads(_as_json(before, org_id)),
                after=orjson.loads(_as_json(after, org_id)),
            )
        from maestrale.hub.bus import publish_once

        await publish_once(settings, [Invalidation("limits", org_id)])
        sys.stdout.write(_as_json(after, org_id).decode() + "\n")
        return 0
    finally:
        await db.dispose()
