"""`maestrale serve | worker | migrate | keys ...`"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from maestrale.config import Settings, load_settings, make_data_dir
from maestrale.core.logs import configure_logging


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML settings file (also MAESTRALE_CONFIG)")
    parser.add_argument("--data-dir", type=Path, help="where SQLite, blobs and keys live")
    parser.add_argument(
        "--database-url", help="SQLAlchemy async URL (sqlite+aiosqlite, postgresql+asyncpg)"
    )


MAX_KEY_DAYS = 36_500


def _days(raw: str) -> int:
    """A key's lifetime in days: 0 would make a key that never expires, a negative number one
    already expired."""
    try:
        days = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number of days") from None
    if not 1 <= days <= MAX_KEY_DAYS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_KEY_DAYS} days")
    return days


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="maestrale", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the HTTP API (with an in-process worker)")
    _common(serve)
    serve.add_argument("--host", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default: 8000)")
    serve.add_argument("--models", type=Path, help="TOML model catalog merged over the defaults")
    serve.add_argument("--no-worker", action="store_true", help="do not run the in-process worker")
    serve.add_argument(
        "--workers",
        type=int,
        help="server processes (default: one per usable CPU, at most 4; also MAESTRALE_WORKERS)",
    )

    worker = sub.add_parser("worker", help="run a job worker (any number, on any machine)")
    _common(worker)
    worker.add_argument("--concurrency", type=int, help="jobs run at once (default: 4)")
    worker.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="also load the job kinds of MODULE (its register(registry) function)",
    )

    migrate = sub.add_parser("migrate", help="apply database migrations")
    _common(migrate)

    keys = sub.add_parser("keys", help="manage API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="create a key and print it once")
    _common(create)
    create.add_argument("--name", default="cli", help="a name to recognise the key by")
    create.add_argument(
        "--kind",
        choices=["standard", "admin"],
        default="standard",
        help="a workspace's key (Authorization: Bearer) or an organization's admin key (x-api-key)",
    )
    create.add_argument("--workspace", help="workspace id (default: the default workspace)")
    create.add_argument(
        "--expires-in-days",
        type=_days,
        help=f"days until the key expires (1 to {MAX_KEY_DAYS}; never, when not given)",
    )
    listing = keys_sub.add_parser("list", help="list keys (never their values)")
    _common(listing)
    revoke = keys_sub.add_parser("revoke", help="revoke a key by id")
    _common(revoke)
    revoke.add_argument("key_id", help="the key's id (`keys list` prints it)")
    from maestrale.admin.billing.commands import add_parser as add_limits_parser

    add_limits_parser(sub, _common)
    from maestrale.classifiers.commands import add_parser as add_classifier_parser

    add_classifier_parser(sub, _common)
    from maestrale.connectors.commands import add_parser as add_secrets_parser

    add_secrets_parser(sub, _common)
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(
        getattr(args, "config", None),
        data_dir=getattr(args, "data_dir", None),
        database_url=getattr(args, "database_url", None),
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        models=getattr(args, "models", None),
        worker=False if getattr(args, "no_worker", False) else None,
        workers=getattr(args, "workers", None),
        worker_concurrency=getattr(args, "concurrency", None),
    )


def _serve(settings: Settings) -> int:
    from maestrale.processes.supervisor import serve

    return serve(settings)


async def _worker(settings: Settings, imports: list[str]) -> None:
    from maestrale.config import make_data_dir
    from maestrale.core.jobs.runner import load_job_modules, run_worker
    from maestrale.services import open_services

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()

    def signalled() -> None:
        # The first signal stops claiming: running jobs get `worker_grace_seconds` to finish,
        # then go back to the queue. A second one stops at once (their leases then expire and
        # another worker takes them over).
        if not stop.is_set():
            stop.set()
        elif main is not None:
            main.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, signalled)
    make_data_dir(settings.data_dir)
    async with open_services(settings) as services:
        load_job_modules(services.job_registry, imports)
        await run_worker(
            services.db,
            services.job_registry,
            concurrency=settings.worker_concurrency,
            lease_seconds=settings.job_lease_seconds,
            poll_seconds=settings.job_poll_seconds,
            stop=stop,
            grace_seconds=settings.worker_grace_seconds,
            per_workspace=settings.jobs_per_workspace,
        )


async def _keys(settings: Settings, args: argparse.Namespace) -> int:
    from maestrale.core.auth.repository import KeyRepository, TenancyRepository
    from maestrale.core.clock import iso, utcnow
    from maestrale.core.db import Database

    db = Database(settings.resolved_database_url)
    try:
        async with db.transaction() as work:
            keys = KeyRepository(work.session)
            if args.keys_command == "list":
                now = utcnow()
                for key in await keys.list_keys():
                    if key.revoked_at:
                        state = "revoked"
                    elif key.expires_at is not None and key.expires_at <= now:
                        state = "expired"
                    else:
                        state = "active"
                    print(
                        f"{key.id}\t{key.kind}\t{key.name}\t{key.hidden_key}\t{state}\t"
                        f"workspace={key.workspace_id or '-'}\texpires={iso(key.expires_at) or '-'}"
                    )
                return 0
            if args.keys_command == "revoke":
                if not await keys.revoke(args.key_id):
                    print(f"no active key with id {args.key_id}", file=sys.stderr)
                    return 1
                await _audit_key(work.session, args.key_id, "api_key.delete")
                from maestrale.core.auth.invalidation import Invalidation
                from maestrale.hub.bus import publish_once

                async def revoked() -> None:
                    await publish_once(settings, [Invalidation("key", args.key_id)])
                    print(f"revoked {args.key_id}")

                # The running servers are told once the revocation is committed, never before.
                work.on_commit(revoked)
                return 0
            ws = (
                await TenancyRepository(work.session).workspace(args.workspace)
                if args.workspace
                else await TenancyRepository(work.session).default_workspace()
            )
            if ws is None:
                print(
                    "workspace not found (start the server once to create the default one)",
                    file=sys.stderr,
                )
                return 1
            days = args.expires_in_days
            expires = utcnow() + timedelta(days=days) if days is not None else None
            row, clear = await keys.create_key(
                kind=args.kind,
                organization_id=ws.organization_id,
                workspace_id=ws.id if args.kind == "standard" else None,
                user_id=None,
                name=args.name,
                expires_at=expires,
            )
            await _audit_key(work.session, row.id, "api_key.create")
            print(f"id: {row.id}", file=sys.stderr)
            print(clear)
            return 0
    finally:
        await db.dispose()


async def _audit_key(session: Any, key_id: str, action: str) -> None:
    from maestrale.admin.audit import AuditLog
    from maestrale.core.auth.repository import KeyRepository

    key = await KeyRepository(session).get(key_id)
    assert key is not None  # the caller has just created or revoked it
    state = {"kind": key.kind, "name": key.name, "hidden_key": key.hidden_key}
    AuditLog(session).record(
        organization_id=key.organization_id,
        actor="cli",
        action=action,
        target_type="api_key",
        target_id=key_id,
        before=state if action.endswith("delete") else None,
        after={
            **state,
            "workspace_id": key.workspace_id,
            "revoked": key.revoked_at is not None,
        },
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
    except FileNotFoundError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    configure_logging(settings.log_level, settings.log_json)
    if args.command == "serve":
        return _serve(settings)
    if args.command == "worker":
        try:
            asyncio.run(_worker(settings, args.imports))
        except asyncio.CancelledError:  # a second SIGTERM: stopped without waiting
            return 1
        return 0
    if args.command == "classifier":
        from maestrale.classifiers.commands import run as run_classifier

        return run_classifier(settings, args)
    make_data_dir(settings.data_dir)
    from maestrale.core.migrate import upgrade

    upgrade(settings.resolved_database_url)
    if args.command == "migrate":
        print("database is up to date")
        return 0
    if args.command == "limits":
        from maestrale.admin.billing.commands import run as run_limits

        return asyncio.run(run_limits(settings, args))
    if args.command == "secrets":
        from maestrale.connectors.commands import run as run_secrets
        from maestrale.inbound.webhooks.commands import SEALED as webhook_secrets

        return asyncio.run(run_secrets(settings, args, webhook_secrets))
    return asyncio.run(_keys(settings, args))


if __name__ == "__main__":
    raise SystemExit(main())
