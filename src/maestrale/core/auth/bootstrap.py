"""First start: the default organization, workspace and owner, and their first two keys."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.keys import hash_key
from maestrale.core.auth.repository import KeyRepository, TenancyRepository

log = logging.getLogger("maestrale.bootstrap")


@dataclass(frozen=True)
class BootstrapResult:
    organization_id: str
    workspace_id: str
    user_id: str
    api_key: str | None  # clear keys only when they were generated now
    admin_key: str | None


async def bootstrap(
    session: AsyncSession,
    *,
    api_key: str | None,
    admin_key: str | None,
    keys_file: Path | None,
) -> BootstrapResult | None:
    """Create the default tenant once. Returns None when it already exists.

    Given keys are stored (hashed) as they are; otherwise keys are generated and written once
    to `keys_file` (mode 0600), never to the log.
    """
    if session.get_bind().dialect.name == "postgresql":
        # Replicas starting together on an empty database: one creates the tenant, the others
        # wait here (until its commit) and then find it.
        await session.execute(text("SELECT pg_advisory_xact_lock(hashtext('maestrale.bootstrap'))"))
    tenancy = TenancyRepository(session)
    if await tenancy.default_workspace() is not None:
        await _ensure_given_keys(session, api_key, admin_key)
        return None
    org = await tenancy.create_organization("Default organization")
    ws = await tenancy.create_workspace(org.id, "Default workspace", is_default=True)
    user = await tenancy.create_user(org.id, "owner@localhost", ["admin"])
    await tenancy.add_member(ws.id, user.id, ["admin"])
    keys = KeyRepository(session)
    _, std = await keys.create_key(
        kind="standard",
        organization_id=org.id,
        workspace_id=ws.id,
        user_id=user.id,
        name="bootstrap",
        key=api_key,
    )
    _, adm = await keys.create_key(
        kind="admin",
        organization_id=org.id,
        workspace_id=None,
        user_id=user.id,
        name="bootstrap-admin",
        key=admin_key,
    )
    generated_std = None if api_key else std
    generated_adm = None if admin_key else adm
    if keys_file is not None and (generated_std or generated_adm):
        _write_keys_file(keys_file, generated_std, generated_adm)
    return BootstrapResult(org.id, ws.id, user.id, generated_std, generated_adm)


async def _ensure_given_keys(
    session: AsyncSession, api_key: str | None, admin_key: str | None
) -> None:
    """A bootstrap key set after the first start is added to the default tenant, once; a key
    that exists already (live, revoked or expired) is left as the operator left it."""
    keys = KeyRepository(session)
    ws = await TenancyRepository(session).default_workspace()
    assert ws is not None
    for kind, key in (("standard", api_key), ("admin", admin_key)):
        if key and not await keys.hash_exists(hash_key(key)):
            await keys.create_key(
                kind=kind,
                organization_id=ws.organization_id,
                workspace_id=ws.id if kind == "standard" else None,
                user_id=None,
                name=f"bootstrap-{kind}",
                key=key,
            )


def _write_keys_file(path: Path, api_key: str | None, admin_key: str | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        if api_key:
            fh.write(f"MAESTRALE_API_KEY={api_key}\n")
        if admin_key:
            fh.write(f"MAESTRALE_ADMIN_KEY={admin_key}\n")
    os.chmod(path, 0o600)
    log.warning("generated bootstrap keys were written to %s (mode 0600)", path)
