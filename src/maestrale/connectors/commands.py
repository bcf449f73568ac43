"""`maestrale secrets reseal`: after a change of the server secret (the old one kept in
MAESTRALE_PREVIOUS_SECRET_KEYS), rewrite every secret kept at rest under the current key, so that
the old key can be dropped. Values already under the current key are left as they are; a value
no configured key opens is reported, never lost silently."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from maestrale.config import Settings, previous_secrets, secret_value
from maestrale.connectors.credentials import CREDENTIAL, HEADERS, OAUTH_CLIENT
from maestrale.connectors.repository import SealedColumn
from maestrale.connectors.tables import Connector, ConnectorCredential
from maestrale.core.crypto import SecretBox, SecretUnreadable
from maestrale.core.db import Database
from maestrale.core.signing import load_or_create_secret


@dataclass(frozen=True, slots=True)
class Sealed:
    """A column that holds sealed values, and the purpose they were sealed for."""

    table: type[Any]  # a table with an `id` primary key
    column: str
    purpose: str


SEALED = (
    Sealed(Connector, "headers_sealed", HEADERS),
    Sealed(Connector, "oauth_client_sealed", OAUTH_CLIENT),
    Sealed(ConnectorCredential, "sealed", CREDENTIAL),
)


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    common: Callable[[argparse.ArgumentParser], None],
) -> None:
    secrets = sub.add_parser("secrets", help="secrets kept at rest (connector credentials)")
    secrets_sub = secrets.add_subparsers(dest="secrets_command", required=True)
    reseal = secrets_sub.add_parser(
        "reseal", help="rewrite every sealed secret under the current secret key"
    )
    common(reseal)


def box_of(settings: Settings) -> SecretBox:
    secret = load_or_create_secret(settings.data_dir, secret_value(settings.secret_key))
    return SecretBox(secret, previous_secrets(settings))


async def reseal(
    db: Database, box: SecretBox, columns: Iterable[Sealed] = SEALED
) -> tuple[int, int]:
    """Reseal what is not under the current key: (values rewritten, values unreadable)."""
    rewritten = unreadable = 0
    async with db.transaction() as work:
        for sealed in columns:
            column = SealedColumn(work.session, sealed.table, sealed.column)
            for row_id, value in await column.values():
                if not value or box.is_current(value):
                    continue
                try:
                    fresh = box.seal(box.open(value, sealed.purpose), sealed.purpose)
                except SecretUnreadable:
                    unreadable += 1
                    continue
                await column.replace(row_id, value, fresh)
                rewritten += 1
    return rewritten, unreadable


async def run(settings: Settings, args: argparse.Namespace, more: Sequence[Sealed] = ()) -> int:
    """`more`: the sealed columns of the domains above this one (the command line names
    them; see `cli`)."""
    db, box = Database(settings.resolved_database_url), box_of(settings)
    try:
        rewritten, unreadable = await reseal(db, box, (*SEALED, *more))
    finally:
        await db.dispose()
    sys.stdout.write(f"{rewritten} secrets resealed under key {box.current_key_id}\n")
    if unreadable:
        sys.stdout.write(
            f"{unreadable} secrets no configured key opens: add the key they were sealed with "
            "to MAESTRALE_PREVIOUS_SECRET_KEYS and run this again\n"
        )
        return 1
    return 0
