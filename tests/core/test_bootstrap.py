"""First start: the default tenant and its keys, given or generated, created exactly once."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest
from sqlalchemy import func, select

from maestrale.core.auth.bootstrap import bootstrap
from maestrale.core.auth.keys import hash_key
from maestrale.core.auth.repository import KeyRepository
from maestrale.core.auth.tables import ApiKey, Workspace
from maestrale.core.db import Database

pytestmark = pytest.mark.both_databases()


async def test_generated_keys_go_to_a_private_file(db: Database, tmp_path: Path) -> None:
    keys_file = tmp_path / "bootstrap-keys"
    async with db.transaction() as work:
        result = await bootstrap(work.session, api_key=None, admin_key=None, keys_file=keys_file)
    assert result is not None and result.api_key and result.admin_key
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    text = keys_file.read_text()
    assert f"MAESTRALE_API_KEY={result.api_key}" in text
    assert f"MAESTRALE_ADMIN_KEY={result.admin_key}" in text
    assert len(result.api_key) >= 43  # 256 bits, url-safe base64
    async with db.transaction() as work:
        keys = KeyRepository(work.session)
        std = await keys.principal_for_hash(hash_key(result.api_key))
        adm = await keys.principal_for_hash(hash_key(result.admin_key))
    assert std is not None and std.kind == "standard" and std.workspace_id == result.workspace_id
    assert adm is not None and adm.kind == "admin" and adm.workspace_id is None


async def test_given_keys_are_used_and_bootstrap_runs_once(db: Database, tmp_path: Path) -> None:
    for _ in range(2):
        async with db.transaction() as work:
            await bootstrap(
                work.session,
                api_key="msk_given_0123456789",
                admin_key="msa_given_0123456789",
                keys_file=tmp_path / "k",
            )
    assert not (tmp_path / "k").exists()
    async with db.transaction() as work:
        assert (
            await work.session.execute(select(func.count()).select_from(Workspace))
        ).scalar_one() == 1
        assert (
            await work.session.execute(select(func.count()).select_from(ApiKey))
        ).scalar_one() == 2


async def test_a_key_set_later_is_added_but_a_revoked_one_stays_revoked(
    db: Database, tmp_path: Path
) -> None:
    async with db.transaction() as work:
        await bootstrap(work.session, api_key=None, admin_key=None, keys_file=tmp_path / "k")
    async with db.transaction() as work:
        await bootstrap(
            work.session, api_key="msk_later_0123456789", admin_key=None, keys_file=None
        )
    async with db.transaction() as work:
        keys = KeyRepository(work.session)
        principal = await keys.principal_for_hash(hash_key("msk_later_0123456789"))
        assert principal is not None
        await keys.revoke(principal.key_id)
    async with db.transaction() as work:
        await bootstrap(
            work.session, api_key="msk_later_0123456789", admin_key=None, keys_file=None
        )
    async with db.transaction() as work:
        assert (
            await KeyRepository(work.session).principal_for_hash(hash_key("msk_later_0123456789"))
            is None
        )


async def test_replicas_starting_together_create_one_tenant(
    database_url: str, tmp_path: Path
) -> None:
    """Three serving processes bootstrap an empty database at once (each its own connection):
    one default tenant, and the given keys stored once."""
    if not database_url.startswith("postgresql"):
        pytest.skip("replicas share a Postgres database")
    databases = [Database(database_url) for _ in range(3)]

    async def start(db: Database) -> None:
        async with db.transaction() as work:
            await bootstrap(
                work.session, api_key="msk_together_0123456789", admin_key=None, keys_file=None
            )

    try:
        await asyncio.gather(*(start(db) for db in databases))
        async with databases[0].transaction() as work:
            count = select(func.count()).select_from(Workspace)
            assert (await work.session.execute(count)).scalar_one() == 1
            keys = select(func.count()).select_from(ApiKey)
            assert (await work.session.execute(keys)).scalar_one() == 2
    finally:
        for db in databases:
            await db.dispose()
