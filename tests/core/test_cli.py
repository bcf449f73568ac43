"""`maestrale migrate` and `maestrale keys create|list|revoke` against a real database file: the
first through `python -m maestrale` (the entry point), the rest in process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from maestrale.core.auth.bootstrap import bootstrap
from maestrale.core.db import Database
from tests.support.cli import run


def run_process(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "maestrale", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_keys_lifecycle(tmp_path: Path) -> None:
    data = tmp_path / "data"
    migrated = run_process("migrate", data_dir=data)
    assert migrated.returncode == 0 and "up to date" in migrated.stdout, migrated.stderr
    assert data.stat().st_mode & 0o777 == 0o700  # holds the database and the bootstrap keys
    db = Database(f"sqlite+aiosqlite:///{(data / 'maestrale.db').resolve()}")
    async with db.transaction() as work:
        await bootstrap(work.session, api_key=None, admin_key=None, keys_file=None)
    await db.dispose()

    created = run("keys", "create", "--name", "ci", data_dir=data)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    key_id = created.stderr.split("id: ")[1].split()[0]
    assert key.startswith("msk_")

    listing = run("keys", "list", data_dir=data)
    assert key_id in listing.stdout
    assert key not in listing.stdout  # never the value

    assert run("keys", "revoke", key_id, data_dir=data).returncode == 0
    assert "revoked" in run("keys", "list", data_dir=data).stdout
    assert run("keys", "revoke", key_id, data_dir=data).returncode == 1
