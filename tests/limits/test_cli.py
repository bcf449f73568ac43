"""`maestrale limits show | set | set-model | unset-model` against a real database file."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select

from maestrale.admin.tables import AuditEntry
from maestrale.core.auth.bootstrap import bootstrap
from maestrale.core.db import Database
from tests.support.cli import run


async def test_limits_cli(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run("migrate", data_dir=data).returncode == 0
    db = Database(f"sqlite+aiosqlite:///{(data / 'maestrale.db').resolve()}")
    async with db.transaction() as work:
        await bootstrap(work.session, api_key=None, admin_key=None, keys_file=None)

    shown = run("limits", "show", data_dir=data)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["requests_per_second"] is None

    changed = run("limits", "set", "--rps", "7", "--spend", "12.5", data_dir=data)
    assert changed.returncode == 0, changed.stderr
    after = json.loads(changed.stdout)
    assert after["requests_per_second"] == 7 and after["monthly_spend_limit"] == 12.5

    model = run(
        "limits",
        "set-model",
        "maestrale-echo",
        "--tpm",
        "1000",
        "--tokens-per-month",
        "unlimited",
        data_dir=data,
    )
    assert model.returncode == 0, model.stderr
    assert json.loads(model.stdout)["models"] == {
        "maestrale-echo": {"tokens_per_minute": 1000, "tokens_per_month": None}
    }
    shown = json.loads(run("limits", "show", data_dir=data).stdout)
    assert shown["models"]["maestrale-echo"]["tokens_per_minute"] == 1000

    unlimited = json.loads(run("limits", "set", "--rps", "unlimited", data_dir=data).stdout)
    assert unlimited["requests_per_second"] is None
    assert run("limits", "unset-model", "maestrale-echo", data_dir=data).returncode == 0
    assert json.loads(run("limits", "show", data_dir=data).stdout)["models"] == {}
    assert run("limits", "unset-model", "maestrale-echo", data_dir=data).returncode == 1

    bad = run("limits", "set", "--rps", "-3", data_dir=data)
    assert bad.returncode == 2 and "positive" in bad.stderr
    bad = run("limits", "set", "--rps", "fast", data_dir=data)
    assert bad.returncode == 2
    missing = run("limits", "show", "--organization", "nope", data_dir=data)
    assert missing.returncode == 1 and "not found" in missing.stderr

    async with db.transaction() as work:
        actions = [
            e.action
            for e in (
                await work.session.execute(select(AuditEntry).order_by(AuditEntry.created_at))
            ).scalars()
        ]
        entries = list((await work.session.execute(select(AuditEntry))).scalars())
    await db.dispose()
    assert actions == ["limits.set", "limits.set-model", "limits.set", "limits.unset-model"]
    assert all(e.actor == "cli" for e in entries)
