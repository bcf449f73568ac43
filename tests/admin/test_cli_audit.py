"""Key changes made with `maestrale keys` are audited like those of the admin API."""

from __future__ import annotations

from pathlib import Path

import orjson
from sqlalchemy import select

from maestrale.admin.tables import AuditEntry
from maestrale.core.auth.bootstrap import bootstrap
from maestrale.core.db import Database
from tests.support.cli import run


async def test_cli_key_changes_are_audited(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run("migrate", data_dir=data).returncode == 0
    db = Database(f"sqlite+aiosqlite:///{(data / 'maestrale.db').resolve()}")
    async with db.transaction() as work:
        await bootstrap(work.session, api_key=None, admin_key=None, keys_file=None)
    created = run("keys", "create", "--name", "audited", data_dir=data)
    key = created.stdout.strip()
    key_id = created.stderr.split("id: ")[1].split()[0]
    assert run("keys", "revoke", key_id, data_dir=data).returncode == 0
    async with db.transaction() as work:
        entries = list(
            (
                await work.session.execute(select(AuditEntry).order_by(AuditEntry.created_at))
            ).scalars()
        )
    await db.dispose()
    assert [(e.actor, e.action, e.target_id) for e in entries] == [
        ("cli", "api_key.create", key_id),
        ("cli", "api_key.delete", key_id),
    ]
    assert entries[1].after is not None and entries[1].after["revoked"] is True
    assert key not in orjson.dumps([[e.before, e.after] for e in entries]).decode()
